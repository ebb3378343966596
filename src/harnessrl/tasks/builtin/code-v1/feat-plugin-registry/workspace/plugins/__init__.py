from plugins import builtin  # noqa: F401  (registers the built-in plugins)
