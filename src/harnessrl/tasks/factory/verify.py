"""Run a task's tests in this process, fast: the factory's keep-or-drop check for its own corpus.

Thousands of candidate mutants are each run twice (buggy, then with the reference edit), so a
pytest subprocess per run (about 0.4 s) would cost most of an hour; here the modules and test
files are exec'd from their text into fresh module objects and each test case is called
directly (parametrize tables expanded as pytest does), under a per-case alarm. This is for the
trusted corpus only (its tests use no fixtures): `confirm_with_pytest` re-checks a task with
the real `python -m pytest` in a temporary folder, and the tests grade samples with the real
grader. A case that times out marks the mutant as hanging: the factory drops those (an episode
whose tests hang costs its whole test timeout and teaches nothing).
"""

from __future__ import annotations

import ast
import itertools
import re
import signal
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path


class _Timeout(BaseException):
    pass


@dataclass(frozen=True)
class Failure:
    case: str  # "test_file.py::test_name[i]"
    error: str  # "AssertionError" | "NameError: name 'le' is not defined" | "timeout" | ...
    symptom: str  # "f('a') returns 'b', expected 'c'", or the failing line; "" when unknown


def _alarm(_sig, _frame):
    raise _Timeout()


def _cases(fn) -> list[dict]:
    """The parameter sets pytest would call `fn` with (stacked parametrize marks: their product)."""
    tables = []
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = [dict(zip(names, v if len(names) > 1 else (v,))) for v in values]
        tables.append(rows)
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*tables)] or [{}]


def _short(value, limit: int = 80) -> str | None:
    text = repr(value)
    return text if len(text) <= limit else None


class _Render(ast.NodeTransformer):
    """`m.f(*args)` with the frame's values spliced in -> `f('a', 2)`: the call a bug report shows."""

    def __init__(self, local: dict, env: dict | None = None):
        self.local, self.ok = local, True
        # the names the test reaches a workspace module by (`m`, or a package's own name)
        self.modules = {k for k, v in (env or {}).items() if isinstance(v, types.ModuleType)
                        and getattr(v, "__file__", "").startswith("/app/")}

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.modules:
            return ast.Name(node.attr)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.local:
            text = _short(self.local[node.id])
            if text is None:
                self.ok = False
                return node
            try:
                return ast.parse(text, mode="eval").body
            except SyntaxError:
                self.ok = False
        return node

    def visit_Call(self, node):
        args = []
        for a in node.args:
            spliced = isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)
            if spliced and isinstance(self.local.get(a.value.id), (tuple, list)):
                args.extend(self.visit(ast.parse(repr(v), mode="eval").body) for v in self.local[a.value.id])
            else:
                args.append(self.visit(a))
        node.args = args
        node.func = self.visit(node.func)
        node.keywords = [self.visit(k) for k in node.keywords]
        return node


def _symptom(line: str, frame, error: str) -> str:
    """What a user would report: the call, what it gave and what was expected, from the failing line."""
    try:
        stmt = ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError):
        return ""
    if not isinstance(stmt, ast.Assert):
        return f"`{line.strip()}` raises {error}" if error != "AssertionError" else ""
    test = stmt.test
    env = {**frame.f_globals, **frame.f_locals}
    render = _Render(frame.f_locals, frame.f_globals)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left, right = test.left, test.comparators[0]

        def calls_workspace(n) -> bool:
            return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                       and c.func.value.id in render.modules for c in ast.walk(n))

        if calls_workspace(right) and not calls_workspace(left):  # `assert expected == m.f(x)`
            left, right = right, left
        shown = ast.unparse(render.visit(ast.parse(ast.unparse(left), mode="eval").body))
        if not render.ok:
            return ""
        try:
            expected = eval(compile(ast.Expression(right), "<case>", "eval"), env)
        except Exception:  # noqa: BLE001 - a test line we cannot re-evaluate: no symptom
            return ""
        if error != "AssertionError":
            want = _short(expected)
            return f"`{shown}` raises {error}" + (f" (expected `{want}`)" if want else "")
        try:
            actual = eval(compile(ast.Expression(left), "<case>", "eval"), env)
        except BaseException:  # noqa: BLE001
            return ""
        a, e = _short(actual), _short(expected)
        return f"`{shown}` returns `{a}`, expected `{e}`" if a and e else ""
    shown = ast.unparse(render.visit(ast.parse(ast.unparse(test), mode="eval").body))
    if not render.ok:
        return ""
    return f"`{shown}` raises {error}" if error != "AssertionError" else f"`{shown}` is false"


_DID_NOT_RAISE = re.compile(r"DID NOT RAISE (?:<class ')?(?:\w+\.)*(\w+)")  # pytest 8 names the class; older, its repr


def _no_raise(line: str, frame, exc: str) -> str:
    """"`f('x')` does not raise ValueError", from the statement inside a `with pytest.raises(...)` block."""
    try:
        expr = ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError):
        return ""
    if not isinstance(expr, ast.Expr):
        return ""
    render = _Render(frame.f_locals, frame.f_globals)
    shown = ast.unparse(render.visit(expr.value))
    return f"`{shown}` does not raise {exc}" if render.ok else ""


def run_tests(modules: dict[str, str], tests: dict[str, str], timeout_s: float = 1.0) -> tuple[int, list[Failure]]:
    """Exec `modules` ({import name: source}) and run every test case of `tests` ({file name: source}).

    Returns (cases run, failures). A module or test file that does not import fails all its cases."""
    saved = {n: sys.modules.get(n) for n in modules}
    old = signal.signal(signal.SIGALRM, _alarm)
    failures, total = [], 0
    try:
        for name, source in sorted(modules.items()):
            mod = types.ModuleType(name)
            mod.__file__ = f"/app/{name}.py"
            sys.modules[name] = mod
        for name, source in sorted(modules.items()):
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            try:
                exec(compile(source, f"/app/{name}.py", "exec"), sys.modules[name].__dict__)
            except BaseException as err:  # noqa: BLE001 - a module that does not import fails every test
                return 1, [Failure(f"{name}.py", f"import: {type(err).__name__}", "")]
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        for fname, source in sorted(tests.items()):
            ns: dict = {"__name__": fname.removesuffix(".py")}
            try:
                exec(compile(source, fname, "exec"), ns)
            except BaseException as err:  # noqa: BLE001
                total += 1
                failures.append(Failure(fname, f"collection: {type(err).__name__}", ""))
                continue
            lines = source.splitlines()
            for tname, fn in ns.items():
                if not (tname.startswith("test_") and callable(fn)):
                    continue
                for i, params in enumerate(_cases(fn)):
                    total += 1
                    case = f"{fname}::{tname}[{i}]"
                    signal.setitimer(signal.ITIMER_REAL, timeout_s)
                    try:
                        fn(**params)
                    except _Timeout:
                        failures.append(Failure(case, "timeout", ""))
                    except BaseException as err:  # noqa: BLE001 - every way a case can fail counts
                        signal.setitimer(signal.ITIMER_REAL, 0)
                        error = type(err).__name__ + (f": {err}" if str(err) and not isinstance(err, AssertionError) else "")
                        tb, frame = err.__traceback__, None
                        while tb is not None:
                            if tb.tb_frame.f_code.co_filename == fname:
                                frame, lineno = tb.tb_frame, tb.tb_lineno
                            tb = tb.tb_next
                        symptom = ""
                        missing = _DID_NOT_RAISE.match(str(err))
                        if missing:  # pytest.raises saw no error: the bug accepts what it should reject
                            error = f"DID NOT RAISE {missing.group(1)}"
                        if frame is not None:
                            signal.setitimer(signal.ITIMER_REAL, timeout_s)
                            try:
                                if missing:  # the call is the first line inside the `with pytest.raises(...)` block
                                    symptom = _no_raise(lines[lineno] if lineno < len(lines) else "", frame, missing.group(1))
                                else:
                                    symptom = _symptom(lines[lineno - 1], frame, error)
                            except _Timeout:
                                symptom = ""
                        failures.append(Failure(case, error[:200], symptom))
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        for n, prev in saved.items():
            if prev is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = prev
    return total, failures


def confirm_with_pytest(files: dict[str, str], tests: dict[str, str], timeout_s: float = 60.0) -> tuple[bool, str]:
    """Run the real `python -m pytest` on a task's files ({path: text}) and tests ({path under tests/: text}) in a
    temporary folder: (all passed, the output's tail)."""
    with tempfile.TemporaryDirectory(prefix="factory-") as tmp:
        root = Path(tmp)
        for rel, text in {**files, **{f"tests/{k}": v for k, v in tests.items()}}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root,
                           env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
                           capture_output=True, text=True, timeout=timeout_s)
        return r.returncode == 0, (r.stdout + r.stderr)[-2000:]
