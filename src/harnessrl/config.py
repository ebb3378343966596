"""Config loading for every harnessrl command: YAML or TOML file + `key=value` overrides.

Each command defines a pydantic model (subclass `Config`). `load_config` merges the file
and the overrides, validates, and turns any failure into one `ConfigError` whose message
names the source, the field, the bad value and what is allowed, so the CLI can print it
instead of a traceback.
"""

from __future__ import annotations

import tomllib
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

C = TypeVar("C", bound="Config")


class ConfigError(Exception):
    """An invalid config. The message is meant for the user, verbatim."""


class Config(BaseModel):
    """Base for config models: unknown keys are errors (a typo must not pass silently)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}: nested settings compared (and named) field by field."""
    if not isinstance(d, dict) or not d:
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def changed_settings(cfg: Config, saved: dict[str, Any], ignore: Iterable[str] = ()) -> list[tuple[str, Any, Any]]:
    """(dotted name, saved value, current value) wherever `cfg` differs from `saved`, an earlier dump of a
    config of the same class (a checkpoint's, a run folder's). A field added to the class since that dump
    counts as its default there: a new option must not block resuming an older run unless it is set to
    something else. Top-level names in `ignore` are skipped."""
    try:
        saved = type(cfg).model_validate(saved).model_dump(mode="json")
    except ValidationError:  # a field since removed or renamed: compare the dump as it was written
        pass
    old, new, skip = _flat(saved), _flat(cfg.model_dump(mode="json")), set(ignore)
    return [(k, old.get(k), new.get(k)) for k in dict.fromkeys([*new, *old])
            if k.split(".")[0] not in skip and old.get(k) != new.get(k)]


def read_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML (.yaml/.yml), TOML (.toml) or JSON (.json: the configs runs save) file into a dict."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found.")
    if not path.is_file():
        raise ConfigError(f"{path}: is a folder, not a config file; give a .yaml, .toml or .json file.")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (not UTF-8); give a .yaml, .toml or .json config file.") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the config file ({err.strerror}).") from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml", ".json"):  # JSON is YAML
            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"{path}: unknown config format {path.suffix!r}; use .yaml, .yml, .toml or .json.")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot parse: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values.")
    return data


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides; values are parsed as YAML scalars/lists ("3", "true", "[1,2]")."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r}: expected key=value (for example seed=3 or ppo.lr=1e-3).")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                node[part] = nxt
            node = nxt
        node[parts[-1]] = value
    return data


def _allowed(model: type[BaseModel], loc: tuple) -> str:
    """Describe what a field accepts: its names for unknown keys, its type for others."""
    m: Any = model
    for part in loc[:-1]:
        field = getattr(m, "model_fields", {}).get(part)
        if field is None:
            return ""
        m = field.annotation
        for arg in typing.get_args(m) or ():
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                m = arg
    fields = getattr(m, "model_fields", None)
    if fields is None:
        return ""
    if loc and loc[-1] not in fields:
        return "known keys here: " + ", ".join(sorted(fields))
    return ""


def format_validation_error(err: ValidationError, model: type[BaseModel], source: str) -> str:
    lines = [f"invalid config ({source}):"]
    for e in err.errors():
        loc = tuple(e["loc"])
        field = ".".join(str(p) for p in loc) or "(top level)"
        value = e.get("input")
        shown = repr(value) if not isinstance(value, dict) else "{...}"
        if len(shown) > 80:
            shown = shown[:77] + "..."
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            hint = _allowed(model, loc)
            lines.append(f"  {field}: unknown key. {hint}")
        elif e["type"] == "missing":
            lines.append(f"  {field}: required, not given.")
        else:
            lines.append(f"  {field} = {shown}: {msg}.")
    return "\n".join(lines)


def load_config(
    model: type[C],
    path: str | Path | None = None,
    overrides: Iterable[str] = (),
    base: dict[str, Any] | None = None,
) -> C:
    """Build a `model` from defaults <- `base` <- file at `path` <- overrides."""
    data: dict[str, Any] = dict(base or {})
    source = "defaults"
    if path is not None:
        data.update(read_file(path))
        source = str(path)
    overrides = list(overrides)
    if overrides:
        apply_overrides(data, overrides)
        source += " + overrides"
    try:
        cfg = model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, model, source)) from None
    check_seeds(cfg, source)
    return cfg


def check_seeds(cfg: Any, source: str) -> None:
    """A negative seed is refused before any work: numpy's and torch's generators take unsigned seeds, so
    `seed=-1` would load a model, run rollouts and only then die in the first seeded draw."""
    for name in ("seed", "seeds", "eval_seeds", "train_seeds"):
        value = getattr(cfg, name, None)
        values = value if isinstance(value, (list, tuple)) else [value]
        bad = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v < 0]
        if bad:
            raise ConfigError(f"{source}: {name}={value!r}: seeds must be >= 0 (numpy and torch take unsigned seeds)")
