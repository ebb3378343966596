"""The agent side of the grader's agent-call bridge (grader_bridge.py has the trusted side).

Copied, as is, next to the grader plugin; imports nothing from harnessrl. Started by the trusted
pytest process the first time a test imports a module of the agent's:

    <agent's python> /grader/harnessrl_child.py RFD WFD

It imports the agent's modules, runs every call, attribute access and operator a test asks for on
them, and answers with plain data. Everything here is UNTRUSTED once the agent's code is imported:
the agent may rewrite this file's functions, print anything, send anything on WFD, or exit. The
trusted side never executes what it receives: it decodes a closed set of data types and opaque
handles (ids into `_objects` below), so the most this process can do is return values of the
agent's choosing, which is what the tests examine anyway, or fail the tests that use it.

Wire, both ways: 4-byte big-endian length, then the payload. Requests from the trusted side are
pickles (the trusted side's data, safe to load here); answers are JSON of tagged values (see
`_encode`), which the trusted side parses without executing anything.
"""

import binascii
import builtins
import collections
import importlib
import io
import json
import operator
import os
import pickle
import struct
import sys
import warnings

# decimal, fractions, pathlib, datetime and traceback are not imported here: start-up time is paid
# on every grading, and an agent's Decimal exists only once the agent imported decimal (sys.modules)

_RFD, _WFD = int(sys.argv[1]), int(sys.argv[2])
_PATHS = json.loads(os.environ.pop("HARNESSRL_AGENT_PATHS", '["/app"]'))
sys.path[:] = [*_PATHS, *(p for p in sys.path if p not in _PATHS and not p.startswith("/grader"))]
sys.argv[:] = ["-c"]  # what agent code sees, as under `python -c`

_objects: dict = {}  # ref -> object the trusted side holds a handle to
_refs: dict = {}  # id(object) -> ref (the object is kept alive by _objects, so ids stay unique)
_MAX_DEPTH = 60
_ARGS: dict = {}  # id(argument copy) -> its position, while a call's answer is encoded


def _recv():
    head = os.read(_RFD, 4)
    while 0 < len(head) < 4:
        head += os.read(_RFD, 4 - len(head))
    if len(head) < 4:
        os._exit(0)  # the trusted side is gone
    size, data = struct.unpack(">I", head)[0], b""
    while len(data) < size:
        chunk = os.read(_RFD, size - len(data))
        if not chunk:
            os._exit(0)
        data += chunk
    return _Unpickler(io.BytesIO(data)).load()


def _send(message) -> None:
    data = json.dumps(message, ensure_ascii=True, allow_nan=True).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(_WFD, view):]


def _ref(obj) -> int:
    key = id(obj)
    if key not in _refs:
        _refs[key] = len(_objects) + 1
        _objects[_refs[key]] = obj
    return _refs[key]


_EXC_BUILTINS = {name for name, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}


_homes: dict = {}


def _home(cls) -> str:
    """The module a class really lives in: pytest sets `Skipped.__module__ = "builtins"` for its
    tracebacks, so a class not found where __module__ says is looked up in sys.modules."""
    name = str(getattr(cls, "__module__", "") or "")
    if getattr(sys.modules.get(name), cls.__qualname__.split(".")[0], None) is not None or id(cls) in _homes:
        return _homes.get(id(cls), name)
    for mod_name, mod in list(sys.modules.items()):
        if getattr(mod, "__dict__", {}).get(cls.__name__) is cls:
            _homes[id(cls)] = mod_name
            return mod_name
    return name


def _handle(obj) -> list:
    """["r", ref, kind, qualname, extra]: an object that stays here."""
    if isinstance(obj, type(sys)):
        return ["r", _ref(obj), "module", obj.__name__, {"package": hasattr(obj, "__path__")}]
    if isinstance(obj, type):
        extra = {}
        if issubclass(obj, BaseException):
            builtin = next((c.__name__ for c in obj.__mro__ if c.__module__ == "builtins"
                            and c.__name__ in _EXC_BUILTINS), "Exception")
            bases = [_handle(b) for b in obj.__bases__ if issubclass(b, BaseException) and b.__module__ != "builtins"]
            extra = {"exception": builtin, "bases": bases[:1]}
        extra["module"] = _home(obj)
        return ["r", _ref(obj), "class", getattr(obj, "__qualname__", "?"), extra]
    kind = "callable" if callable(obj) else "object"
    return ["r", _ref(obj), kind, type(obj).__qualname__, {}]


def _encode(x, depth: int = 0):
    """Plain data by value (exact builtin types, and a few stdlib value types); anything else a handle."""
    if depth > _MAX_DEPTH:
        return _handle(x)
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        return x if -(1 << 62) < x < (1 << 62) else ["I", hex(x)]
    if t is float:
        return ["f", x.hex()]
    if t in (list, dict, set, bytearray) and id(x) in _ARGS:  # the caller's own argument, handed back
        return ["a", _ARGS[id(x)]]
    if t in (list, tuple, set, frozenset):  # mutable ones carry their ref: `is` survives the trip
        tag = {list: "l", tuple: "t", set: "S", frozenset: "F"}[t]
        return [tag, [_encode(v, depth + 1) for v in x], *([_ref(x)] if t in (list, set) else [])]
    if t is dict:
        return ["d", [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in x.items()], _ref(x)]
    if t in (bytes, bytearray):
        return ["B" if t is bytes else "A", binascii.b2a_base64(x, newline=False).decode()]
    if t is complex:
        return ["c", x.real.hex(), x.imag.hex()]
    if t is range:
        return ["R", x.start, x.stop, x.step]
    if x is Ellipsis:
        return ["E"]
    if t is collections.OrderedDict or t is collections.Counter:
        return ["O" if t is collections.OrderedDict else "C",
                [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in x.items()]]
    if t is collections.deque:
        return ["Q", [_encode(v, depth + 1) for v in x], x.maxlen]
    module = t.__module__
    if module == "datetime" and t.__name__ in ("datetime", "date", "time") and getattr(x, "tzinfo", None) is None \
            and t is getattr(sys.modules.get("datetime"), t.__name__, None):
        return ["x", t.__name__, x.isoformat()]
    if module == "datetime" and t is getattr(sys.modules.get("datetime"), "timedelta", None):
        return ["x", "timedelta", [x.days, x.seconds, x.microseconds]]
    if module == "decimal" and t is getattr(sys.modules.get("decimal"), "Decimal", None):
        return ["x", "Decimal", str(x)]
    if module == "fractions" and t is getattr(sys.modules.get("fractions"), "Fraction", None):
        return ["x", "Fraction", [str(x.numerator), str(x.denominator)]]
    if module == "pathlib" and t.__name__ in ("PosixPath", "PurePosixPath") \
            and t is getattr(sys.modules.get("pathlib"), t.__name__, None):
        return ["x", t.__name__, str(x)]
    if isinstance(x, _ParentProxy):
        return ["p", x._pref]
    return _handle(x)


# -- the trusted side's objects, called back ------------------------------------------------


class _ParentProxy:
    """A test's own object (a callback, a fake) handed to the agent's code: every use goes back."""

    __slots__ = ("_pref",)

    def __init__(self, pref):
        object.__setattr__(self, "_pref", pref)

    def __call__(self, *args, **kwargs):
        return _call_parent(self._pref, "__call__", args, kwargs)

    def __getattr__(self, name):
        return _call_parent(self._pref, "getattr", (name,), {})

    def __repr__(self):
        return _call_parent(self._pref, "__repr__", (), {})

    # identity, decided here: one test object is one proxy (asking the other side would ping-pong
    # between two objects that each defer to the other's __eq__)
    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __hash__(self):
        return hash(("parent", self._pref))


for _op in ("__lt__", "__le__", "__gt__", "__ge__", "__len__", "__iter__", "__next__",
            "__getitem__", "__setitem__", "__contains__", "__bool__", "__str__", "__enter__", "__exit__"):
    setattr(_ParentProxy, _op, (lambda op: lambda self, *a: _call_parent(self._pref, op, a, {}))(_op))


_proxies: dict = {}  # pref -> its one proxy here, so `is` holds for a callback handed over twice


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        kind, ref = pid
        if kind == "r":
            return _objects[ref]
        return _proxies.setdefault(ref, _ParentProxy(ref))


def _call_parent(pref, op, args, kwargs):
    _send(["cb", pref, op, [_encode(a) for a in args], [[k, _encode(v)] for k, v in kwargs.items()]])
    while True:
        msg = _recv()
        if msg[0] == "result":
            return msg[1]
        if msg[0] == "raise":
            raise msg[1]
        _serve_one(msg)  # the callback itself called the agent's code again


# -- serving ----------------------------------------------------------------------------------

_BINARY = {"__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
           "__gt__": operator.gt, "__ge__": operator.ge, "__add__": operator.add, "__sub__": operator.sub,
           "__mul__": operator.mul, "__truediv__": operator.truediv, "__floordiv__": operator.floordiv,
           "__mod__": operator.mod, "__pow__": operator.pow, "__and__": operator.and_, "__or__": operator.or_,
           "__xor__": operator.xor, "__lshift__": operator.lshift, "__rshift__": operator.rshift,
           "__matmul__": operator.matmul, "__getitem__": operator.getitem, "__delitem__": operator.delitem,
           "__contains__": lambda a, b: b in a}
_UNARY = {"__len__": len, "__bool__": bool, "__hash__": hash, "__str__": str, "__repr__": repr, "__iter__": iter,
          "__next__": next, "__int__": int, "__float__": float, "__index__": operator.index, "__neg__": operator.neg,
          "__pos__": operator.pos, "__abs__": abs, "__invert__": operator.invert, "__reversed__": reversed,
          "__enter__": lambda o: o.__enter__(), "__dir__": lambda o: sorted(dir(o)),
          "__round__": round, "__complex__": complex, "__bytes__": bytes}


def _op(obj, name, args):
    if name in _UNARY:
        return _UNARY[name](obj, *args) if name == "__round__" else _UNARY[name](obj)
    if name.startswith("__r") and "__" + name[3:] in _BINARY and name not in ("__repr__", "__reversed__", "__round__"):
        return _BINARY["__" + name[3:]](args[0], obj)
    if name in _BINARY:
        return _BINARY[name](obj, args[0])
    if name == "__setitem__":
        obj[args[0]] = args[1]
        return None
    if name == "__exit__":
        return obj.__exit__(*args)
    if name == "__format__":
        return format(obj, *args)
    if name == "isinstance":
        return isinstance(obj, args[0])
    if name == "issubclass":
        return isinstance(obj, type) and issubclass(obj, args[0])
    raise TypeError(f"operation {name!r} is not supported by the grader's agent-call bridge")


def _dispatch(msg):
    kind = msg[0]
    if kind == "import":
        return importlib.import_module(msg[1])
    if kind == "getattr":
        return getattr(msg[1], msg[2])
    if kind == "setattr":
        setattr(msg[1], msg[2], msg[3])
        return None
    if kind == "delattr":
        delattr(msg[1], msg[2])
        return None
    if kind == "call":
        return msg[1](*msg[2], **msg[3])
    if kind == "mutate":  # a test changing one of the agent's lists/dicts/sets in place: here, then its state
        return [getattr(msg[1], msg[2])(*msg[3], **msg[4]), msg[1]]
    if kind == "callname":  # a standard-library function the trusted side asks to apply here (inspect.getsource)
        fn = importlib.import_module(msg[1])
        for part in msg[2].split("."):
            fn = getattr(fn, part)
        return fn(*msg[3], **msg[4])
    if kind == "op":
        return _op(msg[1], msg[2], msg[3])
    raise TypeError(f"unknown request {kind!r}")


def _sync(cwd, env) -> None:
    """The test's working directory and environment (monkeypatch.chdir/setenv), as of this request."""
    try:
        os.chdir(cwd)
    except OSError:
        pass
    if env is not None:
        os.environ.clear()
        os.environ.update(env)


def _describe(err: BaseException) -> dict:
    t = type(err)
    args = []
    for a in err.args[:8]:
        try:
            args.append(_encode(a))
        except Exception:  # noqa: BLE001  (an argument that cannot even be described)
            args.append(repr(a)[:200])
    try:
        text = str(err)
    except Exception:  # noqa: BLE001
        text = t.__name__
    attrs = {}
    for k, v in list(getattr(err, "__dict__", {}).items())[:50]:
        try:
            attrs[str(k)] = _encode(v)
        except Exception:  # noqa: BLE001
            pass
    return {"builtin": t.__name__ if t.__module__ == "builtins" and t.__name__ in _EXC_BUILTINS else None,
            "attrs": attrs,
            "type": _handle(t), "obj": _handle(err), "args": args, "str": text[:4000],
            "tb": "".join(importlib.import_module("traceback").format_exception(t, err, err.__traceback__))[-4000:]}


def _serve_one(msg) -> None:
    if msg[0] == "sync":
        _sync(msg[1], msg[2])
        return
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    with warnings.catch_warnings(record=True) as caught:  # re-issued on the trusted side, whose filters decide
        warnings.simplefilter("always")
        try:
            value = _dispatch(msg)
            sys.stdout, sys.stderr = saved
            # arguments the call may have changed in place (a list it sorted, a dict it filled): their state now
            changed = [[i, _encode(a)] for i, a in enumerate(msg[2]) if type(a) in (list, dict, set, bytearray)] \
                if msg[0] == "call" else []
            if msg[0] == "call":
                _ARGS.update({id(a): i for i, a in enumerate(msg[2]) if type(a) in (list, dict, set, bytearray)})
            try:
                reply = ["ok", _encode(value), out.getvalue(), err.getvalue(), changed]
            finally:
                _ARGS.clear()
        except BaseException as e:  # noqa: BLE001  (SystemExit and KeyboardInterrupt travel as exceptions too)
            sys.stdout, sys.stderr = saved
            reply = ["exc", _describe(e), out.getvalue(), err.getvalue()]
    reply.append([[_handle(w.category) if w.category.__module__ != "builtins" else w.category.__name__,
                   str(w.message)[:4000], str(w.filename), int(w.lineno or 0)] for w in caught[:100]])
    _send(reply)


while True:
    _serve_one(_recv())
