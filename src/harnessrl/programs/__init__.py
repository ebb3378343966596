"""The real agent programs harnessrl runs unmodified, one module each (base.py says what a
module holds: pin, launch, tool table).

    program("aider-cli")          # the Program; a ConfigError naming the known ones otherwise
    all_programs()                # the built-in ones, then those of installed packages

A program from outside harnessrl is a `Program` (or a callable returning one) named by an entry
point of the group `harnessrl.programs` (`[project.entry-points."harnessrl.programs"]
my-agent = "mypkg.agent:PROGRAM"`), with its harness spec files in `Program.specs`.
Adding a built-in program: a module here (found by itself: BUILTIN), its spec in
harness/specs/programs/ and its lock in locks/ (written by the first `harnessrl agents install NAME`).
"""

from __future__ import annotations

import importlib
import pkgutil

from harnessrl.config import ConfigError
from harnessrl.programs.base import Call, Program, Refuse, Say, ToolTable

GROUP = "harnessrl.programs"
#: the program modules: every module of this package but base (each holds one `PROGRAM`)
BUILTIN = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base" and not m.name.startswith("_")))

PROGRAMS: dict[str, Program] = {}
for _module in BUILTIN:
    _p = importlib.import_module(f"harnessrl.programs.{_module}").PROGRAM
    PROGRAMS[_p.name] = _p


def external_programs() -> dict[str, Program]:
    """Programs registered by installed packages (entry points of `harnessrl.programs`)."""
    from harnessrl import plugins

    out: dict[str, Program] = {}
    for name in plugins.entry_point_names(GROUP):
        obj = plugins.from_entry_point(GROUP, name)
        if callable(obj) and not isinstance(obj, Program):
            obj = obj()
        if not isinstance(obj, Program):
            raise ConfigError(f"{GROUP} plugin {name!r} names a {type(obj).__name__}, not a harnessrl.programs.Program")
        if obj.name != name:
            raise ConfigError(f"{GROUP} plugin {name!r} names the program {obj.name!r}: the entry point's name must be it")
        if name in PROGRAMS:
            raise ConfigError(f"{GROUP} plugin {name!r}: a built-in program has that name")
        out[name] = obj
    return out


def all_programs() -> dict[str, Program]:
    """Built-in programs, then those of installed packages."""
    return {**PROGRAMS, **external_programs()}


def program(name: str) -> Program:
    """The program called `name`; a one-line ConfigError naming the known ones otherwise."""
    if name in PROGRAMS:
        return PROGRAMS[name]
    known = all_programs()
    try:
        return known[name]
    except KeyError:
        raise ConfigError(f"agent program {name!r}: not known; known: {', '.join(sorted(known))}") from None


def by_style(style: str) -> Program | None:
    """The program a harness style runs (a spec's `style`), or None."""
    found = next((p for p in PROGRAMS.values() if p.style == style), None)
    return found or next((p for p in external_programs().values() if p.style == style), None)


__all__ = ["BUILTIN", "Call", "GROUP", "PROGRAMS", "Program", "Refuse", "Say", "ToolTable", "all_programs",
           "by_style", "external_programs", "program"]
