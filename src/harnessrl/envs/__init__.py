"""Environments: multi-context gymnasium vector envs, bandits, the MiniWoB++ adapter, the drawer task."""
