"""Analysis: KL-control (exact solver, log-odds preferences, ceiling/mismatch), tilt, BiPA."""
