DEFAULTS = {"host": "localhost", "port": 8080, "debug": False, "ratio": 0.5}


def merged(defaults, overrides):
    out = dict(defaults)
    out.update({k: v for k, v in overrides.items() if k in defaults})
    return out
