_PLUGINS = {}


def register(name, fn):
    if name in _PLUGINS:
        raise ValueError(f"plugin {name!r} already registered")
    _PLUGINS[name] = fn


def get(name):
    return _PLUGINS[name]


def names():
    return sorted(_PLUGINS)
