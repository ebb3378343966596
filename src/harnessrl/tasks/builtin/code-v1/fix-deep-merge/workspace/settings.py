DEFAULTS = {"db": {"host": "localhost", "port": 5432}, "debug": False}


def deep_merge(base, override):
    result = base
    for key, value in override.items():
        result[key] = value
    return result


def load(override):
    return deep_merge(DEFAULTS, override)
