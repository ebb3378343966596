"""The trusted side of the grader's agent-call bridge: tests import the agent's modules, the agent's
code runs in a child process, and the verdict process never executes a line of it.

Copied, as is, next to the grader plugin (harnessrl_bridge.py); imports nothing from harnessrl.
The plugin calls `install(...)` before pytest collects any test:

    import calendar_utils            # a RemoteModule: the agent's module lives in the child
    calendar_utils.is_leap(1900)     # a round trip: the child calls it, the answer comes back as data

Why: pytest tests import the agent's module into the interpreter that records the results, so the
agent's code could patch pytest, register a hook, rewrite the plugin's results or write its own
report (docs/security.md). Here that interpreter holds no agent code: a finder placed before
Python's PathFinder answers every import that would load from an agent path (/app, and anything
outside the trusted base) with a proxy module; calls, attribute access and operators on proxies are
requests to one child per test session (grader_child.py), which imports the real modules. What
comes back is decoded from a closed set of tagged data types and opaque handles: nothing received
is executed, unpickled or evaluated. The child holds no channel to the verdict (the report fd is not
inherited, the verdict process is not dumpable) and any protocol breach raises AgentBridgeError,
a BaseException, so `except Exception` or `pytest.raises(Exception)` in a test cannot turn it
into a pass. An audit hook refuses, as a second line, executing code compiled from an agent path,
loading a shared library from one, and unpickling the process-control functions an agent's pickle
would name.

A test's own objects handed to the agent's code (a callback, a fake) stay here: the child gets a
handle and every use of it comes back as a request; only calls, a fixed set of operators and public
attributes are served. Lists, dicts, sets and bytearrays passed as arguments are copied in and
their state after the call copied back, so in-place changes are seen.
"""

import binascii
import builtins
import collections
import collections.abc
import datetime
import decimal
import fractions
import importlib.machinery
import io
import json
import operator
import os
import pathlib
import pickle
import struct
import subprocess
import sys
import types
import warnings

# this module's own isinstance/issubclass: install() patches the builtin issubclass (see there)
isinstance, issubclass = builtins.isinstance, builtins.issubclass

MAX_FRAME = 16 << 20
MAX_DEPTH = 200
_CHILD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harnessrl_child.py")


class AgentBridgeError(BaseException):
    """The agent's side died, broke the protocol or sent what is not data: the test fails."""


_bridge = None  # the one _Bridge of this session (install)


# -- handles for the agent's objects ------------------------------------------------------------


def _request(*msg):
    return _bridge.request(msg)


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
            return ("p", _bridge.keep(obj))
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
    return module is None or (getattr(module, "__file__", None) or "").startswith(_bridge.tests + "/")


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
            return _bridge.same(rest[1], value) if len(rest) > 1 else value
        if tag in ("d", "O", "C"):
            pairs = [(_decode(k, depth + 1), _decode(v, depth + 1)) for k, v in _items(rest[0])]
            value = {"d": dict, "O": collections.OrderedDict, "C": collections.Counter}[tag](pairs)
            return _bridge.same(rest[1], value) if len(rest) > 1 else value
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
            return _bridge.kept(rest[0])
        if tag == "a" and _bridge.call_args and type(rest[0]) is int and 0 <= rest[0] < len(_bridge.call_args[-1]):
            return _bridge.call_args[-1][rest[0]]  # `out is mine`: the test's own argument
        if tag == "r":
            return _bridge.handle(*rest)
    except AgentBridgeError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, OverflowError, ArithmeticError) as err:
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


class _Bridge:
    def __init__(self, child_argv, agent_paths, trusted, tests):
        self.child_argv, self.agent_paths, self.trusted, self.tests = child_argv, agent_paths, trusted, tests
        self.proc = None
        self.handles: dict = {}  # ref -> local handle (RemoteObject / RemoteModule / class)
        self.kept_objects: dict = {}  # pref -> a test's own object handed to the agent's code
        self.kept_ids: dict = {}
        self.trusted_seen: set = set()
        self.call_args: list = []  # the arguments of the call whose answer is being decoded
        self.containers: dict = {}  # child ref -> the local list/dict/set standing for it
        self.synced = None

    def same(self, ref, value):
        """The agent's list/dict/set with child ref `ref`: the same local object every time it comes back
        (its contents refreshed), so `first is second` means what it means in-process."""
        if type(ref) is not int:
            raise AgentBridgeError("malformed container ref")
        old = self.containers.get(ref)
        kind = _CONTAINERS.get(type(value))
        if kind is None:  # an OrderedDict / Counter: by value
            return value
        if old is None or type(old) is not kind:
            old = self.containers[ref] = kind(value)
            old.__harnessrl_cref__ = ref
            return old
        _refresh(old, value)
        return old

    def keep(self, obj) -> int:
        pref = self.kept_ids.get(id(obj))
        if pref is None:
            pref = self.kept_ids[id(obj)] = len(self.kept_objects) + 1
            self.kept_objects[pref] = obj
        return pref

    def kept(self, pref):
        if type(pref) is not int or pref not in self.kept_objects:
            raise AgentBridgeError("unknown handle")
        return self.kept_objects[pref]

    def handle(self, ref, kind, qualname, extra):
        if type(ref) is not int or type(kind) is not str or type(qualname) is not str or type(extra) is not dict:
            raise AgentBridgeError("malformed handle")
        if ref in self.handles:
            return self.handles[ref]
        if kind == "class":
            local = _trusted_class(str(extra.get("module", "")), qualname)
            if local is not None:  # dataclasses.FrozenInstanceError is this process's own class
                self.handles[ref] = local
                return local
        if kind == "module":
            found = sys.modules.get(qualname)
            mod = found if isinstance(found, RemoteModule) and "__harnessrl_ref__" not in vars(found) \
                else RemoteModule(qualname)
            types.ModuleType.__setattr__(mod, "__harnessrl_ref__", ref)
            made = mod
        elif kind == "class" and "exception" in extra:
            base = getattr(builtins, str(extra["exception"]), Exception)
            agent_bases = [_decode(b) for b in _items(extra.get("bases", []))]
            bases = tuple(b for b in agent_bases if isinstance(b, type) and issubclass(b, BaseException)) or \
                ((base,) if isinstance(base, type) and issubclass(base, BaseException) else (Exception,))
            made = _RemoteClass(qualname.rsplit(".", 1)[-1], bases, {
                "__harnessrl_ref__": ref, "__qualname__": qualname, "__str__": _remote_exc_str,
                "__getattr__": _remote_exc_getattr, "__module__": str(extra.get("module", "agent"))})
        elif kind == "class":
            made = _RemoteClass(qualname.rsplit(".", 1)[-1], (), {"__harnessrl_ref__": ref, "__qualname__": qualname,
                                                                 "__module__": str(extra.get("module", "agent"))})
        else:
            made = object.__new__(RemoteObject)
            for slot, value in (("__harnessrl_ref__", ref), ("_kind", kind), ("_qualname", qualname)):
                object.__setattr__(made, slot, value)
        self.handles[ref] = made
        return made

    # the child process ---------------------------------------------------------------------

    def attach(self, down_w, up_r):
        """The child the grader's init started (grader_init.py), already running."""
        self.down_w, self.up_r, self.proc = down_w, up_r, _Started()

    def _start(self):
        down_r, self.down_w = os.pipe()
        self.up_r, up_w = os.pipe()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESSRL_")}
        env["HARNESSRL_AGENT_PATHS"] = json.dumps(self.agent_paths)
        env["PYTHONPATH"] = ":".join(self.agent_paths)
        self.proc = subprocess.Popen([*self.child_argv, _CHILD_FILE, str(down_r), str(up_w)], pass_fds=(down_r, up_w),
                                     stdin=subprocess.DEVNULL, env=env, close_fds=True)
        os.close(down_r)
        os.close(up_w)

    def _send(self, msg):
        buf = io.BytesIO()
        try:
            _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(msg)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            raise TypeError(f"the grader cannot hand this value to the agent's code: {err}") from None
        data = buf.getvalue()
        try:
            view = memoryview(struct.pack(">I", len(data)) + data)
            while view:
                view = view[os.write(self.down_w, view):]
        except OSError as err:
            raise AgentBridgeError(f"the agent's process is gone ({err.strerror})") from None

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = os.read(self.up_r, min(n - len(data), 1 << 20))
            if not chunk:
                code = self.proc.poll()
                raise AgentBridgeError(f"the agent's process ended (exit {code})" if code is not None
                                       else "the agent's process closed its channel")
            data += chunk
        return data

    def _recv(self):
        size = struct.unpack(">I", self._read(4))[0]
        if size > MAX_FRAME:
            raise AgentBridgeError(f"a reply of {size} bytes (over {MAX_FRAME})")
        try:
            msg = json.loads(self._read(size))
        except (ValueError, RecursionError) as err:
            raise AgentBridgeError(f"a reply that is not JSON ({type(err).__name__})") from None
        if type(msg) is not list or not msg or type(msg[0]) is not str:
            raise AgentBridgeError("a reply that is not a message")
        return msg

    def request(self, msg):
        if self.proc is None:
            self._start()
        state = (os.getcwd(), dict(os.environ))
        if state != self.synced:  # monkeypatch.chdir / setenv: the agent's code sees what the test set
            self._send(("sync", state[0], {k: v for k, v in state[1].items() if not k.startswith("HARNESSRL_")}))
            self.synced = state
        self._send(msg)
        while True:
            reply = self._recv()
            if reply[0] == "cb":
                self._serve_callback(reply)
                continue
            out, err = (reply[2], reply[3]) if len(reply) >= 4 else ("", "")
            if type(out) is str and type(err) is str:  # the agent's prints, for capsys
                sys.stdout.write(out)
                sys.stderr.write(err)
            if (reply[0], len(reply)) in (("ok", 6), ("exc", 5)):
                _reissue(reply[-1])
            if reply[0] == "ok" and len(reply) == 6:
                if msg[0] != "call":
                    return _decode(reply[1])
                _copy_back(msg[2], reply[4])
                self.call_args.append(msg[2])
                try:
                    return _decode(reply[1])
                finally:
                    self.call_args.pop()
            if reply[0] == "exc" and len(reply) == 5:
                raise _exception(reply[1])
            raise AgentBridgeError(f"an unexpected {reply[0]!r} reply")

    def _serve_callback(self, msg):
        """The agent's code uses one of the test's objects: run it here, answer (or raise) there."""
        if len(msg) != 5 or type(msg[2]) is not str:
            raise AgentBridgeError("malformed callback")
        obj, op = self.kept(msg[1]), msg[2]
        args = [_decode(a) for a in _items(msg[3])]
        kwargs = {str(k): _decode(v) for k, v in _items(msg[4])}
        try:
            if op == "__call__":
                result = obj(*args, **kwargs)
            elif op == "getattr" and len(args) == 1 and type(args[0]) is str and not args[0].startswith("_"):
                result = getattr(obj, args[0])  # public attributes only: no walking to globals or frames
            elif op in _CALLBACK_OPS:
                result = _CALLBACK_OPS[op](obj, *args)
            else:
                raise TypeError(f"the grader does not serve {op!r} on a test's object")
        except AgentBridgeError:
            raise
        except BaseException as err:  # noqa: BLE001  (raised in the agent's code, as in-process)
            self._send(("raise", err if _picklable(err) else RuntimeError(f"{type(err).__name__}: {err}")))
            return
        self._send(("result", result))


_CALLBACK_OPS = {"__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
                 "__gt__": operator.gt, "__ge__": operator.ge, "__len__": len, "__iter__": iter, "__next__": next,
                 "__getitem__": operator.getitem, "__setitem__": operator.setitem, "__contains__": lambda a, b: b in a,
                 "__bool__": bool, "__hash__": hash, "__str__": str, "__repr__": repr,
                 "__enter__": lambda o: o.__enter__(), "__exit__": lambda o, *a: o.__exit__(*a)}


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


# -- imports and the audit hook -------------------------------------------------------------------


class _Loader:
    @staticmethod
    def create_module(spec):
        return RemoteModule(spec.name)

    @staticmethod
    def exec_module(module):
        """Import it in the child; its __file__ is the child's (tests read the source with ast)."""
        types.ModuleType.__setattr__(module, "__path__", [])  # a package or not, submodules come through here
        got = _bridge.request(("import", module.__name__))
        if not isinstance(got, RemoteModule):
            raise ImportError(f"the agent's module {module.__name__!r} could not be bound")
        sys.modules[module.__name__] = got  # already known as another module's attribute: that one
        where = _request("getattr", got, "__file__") if vars(module).get("__file__") is None else module.__file__
        if type(where) is str:
            types.ModuleType.__setattr__(got, "__file__", where)


def _remote_spec(name):
    return importlib.machinery.ModuleSpec(name, _Loader, is_package=True)


class _Guard:
    """Before PathFinder: when a place outside the trusted base is on the search path (a test put /app
    on sys.path itself), an import that would load from there is the child's. Otherwise nothing to do:
    PathFinder can only find trusted files, and _Finder (last) takes what it does not find."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        parent = name.rpartition(".")[0]
        if parent and isinstance(sys.modules.get(parent), RemoteModule):
            return _remote_spec(name)
        if all(_trusted(p) for p in (sys.path if path is None else path) if p):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
        return None if places and all(_trusted(p) for p in places) else _remote_spec(name)


class _Finder:
    """Last on sys.meta_path: a module the trusted base does not have but an agent path does."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is None and importlib.machinery.PathFinder.find_spec(name, _bridge.agent_paths) is not None:
            return _remote_spec(name)
        return None


def _trusted(path) -> bool:
    if path in _bridge.trusted_seen:
        return True
    path = os.path.abspath(path)
    ok = any(path == t or path.startswith(t.rstrip("/") + "/") for t in _bridge.trusted)
    if ok:
        _bridge.trusted_seen.add(path)
    return ok


_PICKLE_REFUSED = {"os", "posix", "nt", "subprocess", "sys", "ctypes", "importlib", "runpy", "pty", "socket",
                   "shutil", "marshal", "types", "code", "codeop", "pdb", "signal", "_posixsubprocess", "io", "_io",
                   "harnessrl_grader", "harnessrl_bridge", "pytest", "_pytest", "pluggy"}
_PICKLE_BUILTINS_REFUSED = {"eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr",
                            "globals", "vars", "breakpoint", "input", "memoryview"}


def _audit(event, args):
    if event == "exec" and isinstance(args[0], types.CodeType) and not _in_trust(args[0].co_filename):
        raise RuntimeError(f"the grader refuses to run {args[0].co_filename} in the verdict process")
    if event == "compile" and len(args) > 1 and isinstance(args[1], str) and not _in_trust(args[1]):
        raise RuntimeError(f"the grader refuses to compile {args[1]} in the verdict process")
    if event == "ctypes.dlopen" and isinstance(args[0], str) and "/" in args[0] and not _trusted(args[0]):
        raise RuntimeError(f"the grader refuses to load {args[0]} in the verdict process")
    if event == "pickle.find_class":
        module, name = str(args[0]), str(args[1])
        if module.split(".")[0] in _PICKLE_REFUSED or (module == "builtins" and name in _PICKLE_BUILTINS_REFUSED):
            raise RuntimeError(f"the grader refuses to unpickle {module}.{name} in the verdict process")


def _in_trust(filename) -> bool:
    """Pseudo-files (<string>, <frozen ...>) are code the trusted base compiled itself; a path must be trusted."""
    return not filename.startswith("/") or _trusted(filename)


# Standard-library introspection a test may apply to the agent's objects (inspect.getsource,
# dataclasses.fields, issubclass(Status, enum.Enum)): applied in the child when an argument is one of
# the agent's, where the real object is; the answer is data like any other.
_FORWARDED = {"inspect": ("getsource", "getsourcelines", "getfile", "getdoc", "signature", "isgeneratorfunction",
                          "iscoroutinefunction", "isfunction", "ismethod", "isabstract", "getmembers"),
              "dataclasses": ("is_dataclass", "fields", "asdict", "astuple"), "builtins": ("issubclass",)}


def _forwarding(module, name, fn):
    if name == "issubclass":  # hot (pytest calls it everywhere): only a class of the agent's goes over
        def forwarded(cls, classinfo):
            if fn(cls, classinfo):
                return True
            return type(cls) is _RemoteClass and _request("callname", module, name, (cls, classinfo), {}) is True
    else:
        def forwarded(*args, **kwargs):
            if any(_is_remote(a) for a in args):
                return _request("callname", module, name, args, kwargs)
            return fn(*args, **kwargs)
    forwarded.__wrapped__ = fn
    return forwarded


def in_agent(fn, *args, **kwargs):
    """Apply a standard-library function to the agent's objects where they live (for tests that need
    an introspection not forwarded above)."""
    return _request("callname", fn.__module__, fn.__qualname__, args, kwargs)


class _Started:
    """The init's child: not ours to wait for; its end shows as a closed channel."""

    @staticmethod
    def poll():
        return None


def install(child_argv, agent_paths, trusted, tests, fds=()) -> None:
    """Route the agent's imports through a child; call before any test module is imported."""
    global _bridge
    clean = [os.path.abspath(t) for t in trusted if t and t not in ("/", ".")]
    _bridge = _Bridge(list(child_argv), list(agent_paths), [*clean, os.path.abspath(tests)], os.path.abspath(tests))
    index = sys.meta_path.index(importlib.machinery.PathFinder)
    sys.meta_path.insert(index, _Guard)
    sys.meta_path.append(_Finder)
    # started by the init beside pytest (fds), or now: either way the child's interpreter start-up
    # overlaps pytest's own instead of adding to it; one child per grading serves every test
    if len(fds) == 2:
        _bridge.attach(*fds)
    else:
        _bridge._start()
    sys.addaudithook(_audit)
    import dataclasses
    import inspect
    for module_name, names in _FORWARDED.items():
        module = sys.modules[module_name] if module_name != "builtins" else builtins
        for name in names:
            setattr(module, name, _forwarding(module_name, name, getattr(module, name)))
