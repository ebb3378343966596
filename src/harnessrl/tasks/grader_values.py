"""The values of the grader's agent-call bridge: the local stand-ins for the agent's objects and the
decoder of what the agent's child sends (grader_bridge.py has the channel, the imports and the audit
hook; grader_child.py the agent's side).

Copied, as is, next to the grader plugin (harnessrl_values.py); imports nothing from harnessrl.

- **Decoding is closed.** The child's answers are JSON of tagged values (`_decode`): numbers,
  strings, bytes, lists, tuples, dicts, sets, a few standard-library value types, the caller's own
  argument, and handles. Only those constructors run; anything else, and anything malformed, is
  AgentBridgeError, a BaseException, so no test's `except Exception` or `pytest.raises` turns a breach
  into a pass.
- **Handles.** An object that is not plain data stays in the child; here it is a RemoteObject (every
  attribute, call and operator a request), a RemoteModule, or a local class (`_RemoteClass`) whose
  isinstance and attributes ask the child. The agent's exception classes become local classes whose
  bases follow the agent's; a standard-library class is this process's own.
- **The agent's lists, dicts and sets** are one local object each (identity survives), refreshed when
  they come back; a change the test makes is made on the agent's object too.
- **Requests** carry the test's data by value (pickle, the child trusts this side) and the test's own
  functions and objects by handle (`_Pickler`: the child cannot import a test module; a callback must
  run here).
"""

import binascii
import builtins
import collections
import collections.abc
import datetime
import decimal
import fractions
import io
import pathlib
import pickle
import sys
import types
import warnings

# this module's own isinstance/issubclass: install() patches the builtin issubclass (grader_bridge.py)
isinstance, issubclass = builtins.isinstance, builtins.issubclass

MAX_DEPTH = 200
CHANNEL = None  # the bridge's one channel to the child (grader_bridge.install sets it)


class AgentBridgeError(BaseException):
    """The agent's side died, broke the protocol or sent what is not data: the test fails."""


# -- handles for the agent's objects ------------------------------------------------------------


def _request(*msg):
    return CHANNEL.request(msg)


# Attributes pytest and inspect probe on every object a test module holds (is it a fixture, a mock,
# wrapped, a test?): no agent object is any of these, so they are answered here, not by a round trip.
_PROBES = frozenset({"_mock_name", "__wrapped__", "__test__", "_pytestfixturefunction", "_fixture_function_marker",
                     "__pytest_wrapped__", "pytestmark", "_pytest_fixture_function", "__signature__",
                     "__code__", "__globals__", "__func__", "__self__", "__harnessrl_cref__"})


class RemoteObject:
    """One of the agent's objects, held by the child; every use is a request."""

    __slots__ = ("__harnessrl_ref__", "_kind", "_qualname")

    def __getattr__(self, name):
        if name in _PROBES:
            raise AttributeError(name)
        return _request("getattr", self, name)

    def __setattr__(self, name, value):
        _request("setattr", self, name, value)

    def __delattr__(self, name):
        _request("delattr", self, name)

    def __call__(self, *args, **kwargs):
        return _request("call", self, args, kwargs)

    def __exit__(self, et, ev, tb):
        return _request("op", self, "__exit__", (et, ev, None))


_TYPED = {"__len__": int, "__hash__": int, "__index__": int, "__int__": int, "__bool__": bool, "__str__": str,
          "__repr__": str, "__float__": float, "__format__": str, "__complex__": complex, "__bytes__": bytes}


def _op_method(name):
    want = _TYPED.get(name)

    def method(self, *args):
        value = _request("op", self, name, args)
        if want is not None and type(value) is not want:
            raise AgentBridgeError(f"{name} of the agent's object answered {type(value).__name__}, not {want.__name__}")
        return value
    method.__name__ = name
    return method


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__len__", "__bool__", "__hash__",
              "__str__", "__repr__", "__format__", "__iter__", "__next__", "__reversed__", "__contains__",
              "__getitem__", "__setitem__", "__delitem__", "__enter__", "__int__", "__float__", "__index__",
              "__complex__", "__bytes__", "__round__", "__neg__", "__pos__", "__abs__", "__invert__", "__dir__",
              *(f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or",
                                          "xor", "lshift", "rshift", "matmul") for p in ("", "r"))):
    setattr(RemoteObject, _name, _op_method(_name))


class RemoteModule(types.ModuleType):
    """An agent's module: dunder attributes are the import system's and stay here, the rest is the child's."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if "__harnessrl_ref__" not in vars(self):
            raise AttributeError(name)
        return _request("getattr", self, name)

    def __setattr__(self, name, value):
        if name.startswith("__") and name.endswith("__"):
            types.ModuleType.__setattr__(self, name, value)
        else:
            _request("setattr", self, name, value)

    def __delattr__(self, name):
        _request("delattr", self, name)


class _RemoteClass(type):
    """The type of a class of the agent's: calling it constructs in the child; isinstance asks the child."""

    def __call__(cls, *args, **kwargs):
        return _request("call", cls, args, kwargs)

    def __getattr__(cls, name):
        if name.startswith("__harnessrl") or name in _PROBES or name in ("__mro_entries__", "__class_getitem__"):
            raise AttributeError(name)
        return _request("getattr", cls, name)

    def __instancecheck__(cls, obj):
        if type.__instancecheck__(cls, obj):
            return True
        return _is_remote(obj) and _request("op", obj, "isinstance", (cls,)) is True

    def __subclasscheck__(cls, sub):
        if type.__subclasscheck__(cls, sub):
            return True
        return isinstance(sub, _RemoteClass) and _request("op", sub, "issubclass", (cls,)) is True

    def __repr__(cls):
        return f"<class {cls.__qualname__!r} of the agent's>"

    def __bool__(cls):  # a class is true, whatever its __len__ (defined below for Enums) says
        return True

    def __iter__(cls):  # an Enum's members
        return _request("op", cls, "__iter__", ())

    def __len__(cls):
        return _request("op", cls, "__len__", ())

    def __getitem__(cls, key):
        return _request("op", cls, "__getitem__", (key,))

    def __contains__(cls, item):
        return _request("op", cls, "__contains__", (item,))


def _remote_exc_str(self):
    return vars(self).get("_remote_str", BaseException.__str__(self))


def _remote_exc_getattr(self, name):
    remote = vars(self).get("_remote_obj")
    if remote is None or (name.startswith("__") and name.endswith("__")):
        raise AttributeError(name)
    return _request("getattr", remote, name)


# The agent's lists, dicts and sets come back as these: real containers (isinstance, json, == work
# locally on a snapshot), the same object each time the child returns the same one, and a change the
# test makes (`box.items.clear()`) is made on the agent's object too, then the snapshot refreshed.
_MUTATORS = {list: ("append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "__setitem__",
                    "__delitem__", "__iadd__", "__imul__"),
             dict: ("__setitem__", "__delitem__", "pop", "popitem", "clear", "update", "setdefault", "__ior__"),
             set: ("add", "discard", "remove", "pop", "clear", "update", "difference_update", "intersection_update",
                   "symmetric_difference_update", "__ior__", "__iand__", "__isub__", "__ixor__")}


def _mutator(name):
    def method(self, *args, **kwargs):
        result, _ = _request("mutate", self, name, args, kwargs)  # decoding the state refreshes self
        return self if name.startswith("__i") else result
    method.__name__ = name
    return method


_CONTAINERS = {}
for _base, _names in _MUTATORS.items():
    _CONTAINERS[_base] = type(f"Remote{_base.__name__.title()}", (_base,), {
        "__slots__": ("__harnessrl_cref__",), **{n: _mutator(n) for n in _names},
        "__reduce_ex__": lambda self, proto: (type(self).__mro__[1], (type(self).__mro__[1](self),))})


_CONTAINER_TYPES = set(_CONTAINERS.values())


def _refresh(old, value) -> None:
    base = type(old).__mro__[1]
    if base is list:
        list.__setitem__(old, slice(None), value)
    else:
        base.clear(old)
        base.update(old, value)


def _trusted_class(module: str, qualname: str):
    """A class of a module this process already imported from the trusted base (an exception class,
    or any standard-library class), or None. Never the grader's own modules."""
    mod = sys.modules.get(module)
    if mod is None or isinstance(mod, RemoteModule) or not module or module.startswith("harnessrl"):
        return None
    obj = mod
    for part in qualname.split("."):
        obj = vars(obj).get(part) if isinstance(obj, (types.ModuleType, type)) else None
    if not isinstance(obj, type) or "__harnessrl_ref__" in vars(obj):
        return None
    return obj if issubclass(obj, BaseException) or module.split(".")[0] in sys.stdlib_module_names else None


def _is_remote(obj) -> bool:
    return _ref_of(obj) is not None


def _ref_of(obj):
    if isinstance(obj, type):
        return vars(obj).get("__harnessrl_ref__")
    if isinstance(obj, RemoteModule):
        return vars(obj).get("__harnessrl_ref__")
    if isinstance(obj, RemoteObject):
        return obj.__harnessrl_ref__
    if type(obj) in _CONTAINER_TYPES:
        return obj.__harnessrl_cref__
    if isinstance(obj, BaseException):
        remote = vars(obj).get("_remote_obj") if hasattr(obj, "__dict__") else None
        return None if remote is None else remote.__harnessrl_ref__
    return None


# -- the wire -----------------------------------------------------------------------------------


class _Pickler(pickle.Pickler):
    """Requests: the test's data by value, the agent's handles by ref, the test's own code by handle."""

    def persistent_id(self, obj):
        if type(obj) in _PLAIN_TYPES:
            return None
        ref = _ref_of(obj)
        if ref is not None:
            return ("r", ref)
        if _test_owned(obj):
            return ("p", CHANNEL.keep(obj))
        return None


_PLAIN_TYPES = {str, int, float, bool, type(None), bytes, tuple, list, dict, set, frozenset}


def _test_owned(obj) -> bool:
    """What the child cannot be given by value: functions, classes and instances a test file defines
    (it cannot import them), and bound methods of the test's objects (`seen.append` as a callback must
    append to the test's list, not to a copy)."""
    if isinstance(obj, (BaseException, types.ModuleType)):
        return False
    if isinstance(obj, (collections.abc.Iterator, io.IOBase)):  # a generator the test feeds in: pulled from here
        return True
    if isinstance(obj, types.BuiltinMethodType):
        return not isinstance(obj.__self__, types.ModuleType) and obj.__self__ is not None
    if isinstance(obj, types.MethodType):
        target = obj.__func__
    elif isinstance(obj, (types.FunctionType, type)):
        target = obj
    else:
        target = type(obj)
    if "<locals>" in (getattr(target, "__qualname__", "") or ""):
        return True
    module = sys.modules.get(getattr(target, "__module__", None) or "")
    return module is None or (getattr(module, "__file__", None) or "").startswith(CHANNEL.tests + "/")


_PLAIN = {"l": list, "t": tuple, "S": set, "F": frozenset}
_VALUE_TYPES = {"datetime": datetime.datetime.fromisoformat, "date": datetime.date.fromisoformat,
                "time": datetime.time.fromisoformat, "Decimal": decimal.Decimal, "PosixPath": pathlib.PosixPath,
                "PurePosixPath": pathlib.PurePosixPath}


def _decode(x, depth=0):
    """The child's tagged JSON -> values. Only these constructors run; anything else is a breach."""
    t = type(x)
    if x is None or t is bool or t is str or t is int:
        return x
    if depth > MAX_DEPTH or t is not list or not x or type(x[0]) is not str:
        raise AgentBridgeError(f"not data: {str(x)[:80]}")
    tag, rest = x[0], x[1:]
    try:
        if tag in _PLAIN:
            value = _PLAIN[tag](_decode(v, depth + 1) for v in _items(rest[0]))
            return CHANNEL.same(rest[1], value) if len(rest) > 1 else value
        if tag in ("d", "O", "C"):
            pairs = [(_decode(k, depth + 1), _decode(v, depth + 1)) for k, v in _items(rest[0])]
            value = {"d": dict, "O": collections.OrderedDict, "C": collections.Counter}[tag](pairs)
            return CHANNEL.same(rest[1], value) if len(rest) > 1 else value
        if tag == "f":
            return float.fromhex(rest[0])
        if tag == "I":
            return int(rest[0], 16)
        if tag in ("B", "A"):
            raw = binascii.a2b_base64(rest[0].encode("ascii"), strict_mode=True)
            return raw if tag == "B" else bytearray(raw)
        if tag == "c":
            return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
        if tag == "R" and all(type(v) is int for v in rest):
            return range(*rest)
        if tag == "E":
            return Ellipsis
        if tag == "Q":
            return collections.deque((_decode(v, depth + 1) for v in _items(rest[0])), rest[1])
        if tag == "x" and rest[0] == "timedelta":
            return datetime.timedelta(*(int(v) for v in rest[1]))
        if tag == "x" and rest[0] == "Fraction":
            return fractions.Fraction(int(rest[1][0]), int(rest[1][1]))
        if tag == "x" and rest[0] in _VALUE_TYPES and type(rest[1]) is str:
            return _VALUE_TYPES[rest[0]](rest[1])
        if tag == "p":
            return CHANNEL.kept(rest[0])
        if tag == "a" and CHANNEL.call_args and type(rest[0]) is int and 0 <= rest[0] < len(CHANNEL.call_args[-1]):
            return CHANNEL.call_args[-1][rest[0]]  # `out is mine`: the test's own argument
        if tag == "r":
            return CHANNEL.handle(*rest)
    except AgentBridgeError:
        raise
    except Exception as err:  # noqa: BLE001  (whatever the malformed value broke: a breach, not a test's exception)
        raise AgentBridgeError(f"malformed {tag!r} value: {type(err).__name__}") from None
    raise AgentBridgeError(f"unknown tag {tag!r}")


def _items(v):
    if type(v) is not list:
        raise AgentBridgeError("not a list")
    return v


def _exception(desc):
    """The child's exception, raised here as the same builtin type, or as a local stand-in class of the
    agent's exception type whose bases follow the agent's (so `pytest.raises(agent.Error)` matches)."""
    if type(desc) is not dict:
        raise AgentBridgeError("malformed exception")
    args = tuple(_decode(a) for a in _items(desc.get("args")))
    text, tb = desc.get("str"), desc.get("tb")
    name = desc.get("builtin")
    cls = getattr(builtins, name, None) if type(name) is str else _decode(desc.get("type"))
    if not (isinstance(cls, type) and issubclass(cls, BaseException)) or issubclass(cls, AgentBridgeError):
        raise AgentBridgeError("exception of a type that is not an exception")
    try:
        exc = cls(*args) if name else cls.__new__(cls, *args)
    except Exception:  # noqa: BLE001  (a builtin type that wants other arguments: keep its message)
        exc = cls(text) if name else cls.__new__(cls, text)
    if not name:
        BaseException.__init__(exc, *args)
        attrs = desc.get("attrs") or {}
        if type(attrs) is not dict:
            raise AgentBridgeError("malformed exception attributes")
        vars(exc).update({str(k): _decode(v) for k, v in attrs.items() if not str(k).startswith("__")})
        vars(exc)["_remote_str"] = text if type(text) is str else ""
        vars(exc)["_remote_obj"] = _decode(desc.get("obj"))
    if type(tb) is str and tb:
        exc.add_note("in the agent's code (run by the grader's child process):\n" + tb.rstrip())
    return exc


def _reissue(caught) -> None:
    """Warnings the agent's code issued, issued again here, where the test's filters (pytest.warns,
    simplefilter("error")) decide."""
    for row in _items(caught):
        if type(row) is not list or len(row) != 4 or type(row[1]) is not str or type(row[3]) is not int:
            raise AgentBridgeError("malformed warning")
        cat = getattr(builtins, row[0], None) if type(row[0]) is str else _decode(row[0])
        if not (isinstance(cat, type) and issubclass(cat, Warning)):
            raise AgentBridgeError("a warning of a type that is not a Warning")
        warnings.warn_explicit(row[1], cat, str(row[2]), row[3])


def _picklable(obj) -> bool:
    try:
        _Pickler(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
        return True
    except Exception:  # noqa: BLE001
        return False


def _copy_back(args, changed):
    """In-place changes the agent's code made to list/dict/set/bytearray arguments."""
    for row in _items(changed):
        if type(row) is not list or len(row) != 2 or type(row[0]) is not int or not 0 <= row[0] < len(args):
            raise AgentBridgeError("malformed argument state")
        target, state = args[row[0]], _decode(row[1])
        if type(target) in _CONTAINER_TYPES:
            continue  # the agent's own object, refreshed as it was decoded
        if type(state) in _CONTAINER_TYPES:
            state = type(state).__mro__[1](state)
        if type(state) is not type(target):
            raise AgentBridgeError("argument state of another type")
        if isinstance(target, (list, bytearray)):
            target[:] = state
        else:
            target.clear()
            target.update(state)
