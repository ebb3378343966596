"""The trusted side of the grader's agent-call bridge: tests import the agent's modules, the agent's
code runs in a child process, and the verdict process never executes a line of it.

Copied, as is, next to the grader plugin (harnessrl_bridge.py, with harnessrl_values.py: the values and
their decoder); imports nothing from harnessrl.
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


import builtins
import importlib.machinery
import io
import json
import operator
import os
import pickle
import struct
import subprocess
import sys
import types

try:  # in the grader's sandbox the bridge's modules sit side by side under their copied names
    import harnessrl_values as values
except ImportError:  # imported from the package (tests, the benchmark)
    from harnessrl.tasks import grader_values as values

from_values = ("AgentBridgeError", "RemoteModule", "RemoteObject", "_RemoteClass", "_CONTAINERS", "_CONTAINER_TYPES",
               "_Pickler", "_decode", "_items", "_exception", "_reissue", "_copy_back", "_picklable", "_is_remote",
               "_request", "_trusted_class", "_refresh", "_remote_exc_str", "_remote_exc_getattr")
AgentBridgeError, RemoteModule, RemoteObject, _RemoteClass, _CONTAINERS, _CONTAINER_TYPES, _Pickler, _decode, _items, \
    _exception, _reissue, _copy_back, _picklable, _is_remote, _request, _trusted_class, _refresh, _remote_exc_str, \
    _remote_exc_getattr = (getattr(values, n) for n in from_values)
isinstance, issubclass = values.isinstance, values.issubclass  # the builtins as they were (install patches one)

MAX_FRAME = 16 << 20
_CHILD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harnessrl_child.py")
_bridge = None  # the one _Bridge of this session (install)


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
            try:
                if reply[0] == "cb":
                    self._serve_callback(reply)
                    continue
                kind, value = self._answer(msg, reply)
            except (AgentBridgeError, Warning):  # (a Warning: the test's filter made the agent's warning an error)
                raise
            except Exception as err:  # noqa: BLE001
                # a reply this code did not foresee is a breach, never an AttributeError a test may expect
                raise AgentBridgeError(f"a malformed reply ({type(err).__name__})") from None
            if kind == "raise":
                raise value
            return value

    def _answer(self, msg, reply):
        """("return", value) or ("raise", the agent's exception) for one reply."""
        out, err = (reply[2], reply[3]) if len(reply) >= 4 else ("", "")
        if type(out) is str and type(err) is str:  # the agent's prints, for capsys
            sys.stdout.write(out)
            sys.stderr.write(err)
        if (reply[0], len(reply)) in (("ok", 6), ("exc", 5)):
            _reissue(reply[-1])
        if reply[0] == "ok" and len(reply) == 6:
            if msg[0] != "call":
                return "return", _decode(reply[1])
            _copy_back(msg[2], reply[4])
            self.call_args.append(msg[2])
            try:
                return "return", _decode(reply[1])
            finally:
                self.call_args.pop()
        if reply[0] == "exc" and len(reply) == 5:
            return "raise", _exception(reply[1])
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
    _bridge = values.CHANNEL = _Bridge(list(child_argv), list(agent_paths), [*clean, os.path.abspath(tests)],
                                       os.path.abspath(tests))
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
    import dataclasses  # noqa: F401  (loaded, so their functions can be wrapped below)
    import inspect  # noqa: F401
    for module_name, names in _FORWARDED.items():
        module = sys.modules[module_name] if module_name != "builtins" else builtins
        for name in names:
            setattr(module, name, _forwarding(module_name, name, getattr(module, name)))
