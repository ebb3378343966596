"""Harnesses: how a policy meets a task (prompt, tools, control). Base class + one module per style."""
