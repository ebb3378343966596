"""Real agent programs as black boxes: a registry of pinned programs (registry.py), their
installation into hashed environments (install.py), and how one runs non-interactively inside
an episode's sandbox against a model endpoint (launch.py). Sits just below `harness`: it may
import tasks, config and fileio, never harness, policies or rollout."""
