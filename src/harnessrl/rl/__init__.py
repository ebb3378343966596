"""RL core: advantages, grouping rules, objectives, KL estimators and critics. Pure tensor functions, no I/O."""
