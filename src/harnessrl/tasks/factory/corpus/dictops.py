"""Small dictionary helpers."""


def invert(mapping):
    """{value: key} for a mapping whose values are distinct."""
    return {v: k for k, v in mapping.items()}


def group_by(items, key):
    """{key(item): [items with that key, in order]}."""
    groups = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def count_by(items, key):
    """{key(item): how many items have that key}."""
    counts = {}
    for item in items:
        k = key(item)
        counts[k] = counts.get(k, 0) + 1
    return counts


def merge_with_sum(a, b):
    """A new dict with the keys of both; a key in both maps to the sum of its values."""
    out = dict(a)
    for k, v in b.items():
        if k in out:
            out[k] = out[k] + v
        else:
            out[k] = v
    return out


def deep_get(data, path, default=None):
    """data[p0][p1]... for the dotted `path` ("a.b.c"); `default` as soon as a key is missing."""
    current = data
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return default
        current = current[part]
    return current


def flatten_dict(data, prefix=""):
    """{"a": {"b": 1}} -> {"a.b": 1}: nested dicts to one level with dotted keys."""
    out = {}
    for k, v in data.items():
        name = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict) and v:
            out.update(flatten_dict(v, name))
        else:
            out[name] = v
    return out


def pick(mapping, keys):
    """The entries of `mapping` whose key is in `keys` (keys it lacks are skipped)."""
    return {k: mapping[k] for k in keys if k in mapping}


def omit(mapping, keys):
    """The entries of `mapping` whose key is not in `keys`."""
    return {k: v for k, v in mapping.items() if k not in keys}


def top_keys(counts, n):
    """The `n` keys with the largest values, largest first; ties by key, ascending."""
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [k for k, _ in ordered[:n]]


def diff_keys(old, new):
    """(added, removed, changed): sorted key lists between two dicts."""
    added = sorted(k for k in new if k not in old)
    removed = sorted(k for k in old if k not in new)
    changed = sorted(k for k in old if k in new and old[k] != new[k])
    return added, removed, changed


def default_fill(mapping, defaults):
    """`mapping` with every key of `defaults` it lacks added with the default value."""
    out = dict(defaults)
    out.update(mapping)
    return out
