"""Scripted policies: the oracle, simple baselines, and deliberately faulty oracles.

The oracle plans *intents* from a task's reference solution (edit steps -> `replace`/`write`,
solve.sh -> `run`, then `finish`) and renders them through the episode's harness
(`render_turn` / `render_intent`), so one plan solves a task through every harness's own
syntax. A harness without a shell gets the solution script's *effect* instead: the script is
run once in a scratch sandbox and the files it changed become `write` intents.

Other task kinds plug in a reactive planner (`register_planner(kind, fn)`; `fn(channel) ->
list[Intent]`, the intents still to do, where `channel` is the `Privileged` task/session/
harness/view) — MiniWoB's page-driven oracles and the lookup suite's, for instance. The
built-in planners live next to their harness and are named here by "module:function", so
the harness package never imports policies (policies sit above harness).

Every policy here is privileged (`privileged = True`): the rollout loop hands it the live
task, session and harness in `AgentState.privileged`; learned policies never get them.

Faulty oracles inject one known fault so an evaluation can be checked against it:
  oracle-drop       makes a cosmetic edit instead of the solution   -> dropped_requirement
  oracle-break      solves, then breaks a name only regression tests use -> broke_existing
  oracle-malformed  emits output no harness can parse, every turn   -> format_error
  oracle-typo       one malformed turn first, then the oracle         -> solved, 1 format error
Baselines: `noop` (finishes at once) and `explore` (reads every file, then finishes).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.harness.base import Intent
from harnessrl.policies.base import Action, AgentState, Policy, Privileged
from harnessrl.tasks.contract import TaskLike

#: text that is malformed in every built-in code/terminal style (see the module docstring)
MALFORMED = '<tool_call>{"name": oops</tool_call>\nnotes.txt\n<<<<<<< SEARCH\nhalf a block and no JSON object\n```\nan unclosed listing\n'

Planner = Callable[[Privileged], list[Intent]]
#: task kind -> planner; built-in ones by "module:function" path, imported on first use
PLANNERS: dict[str, str | Planner] = {
    "lookup": "harnessrl.harness.lookup:plan",
    "miniwob": "harnessrl.harness._miniwob:plan",
}


def register_planner(kind: str, planner: str | Planner) -> None:
    """Plug in how the oracle plans tasks of `kind` (a function or a "module:function" path)."""
    PLANNERS[kind] = planner


def _planner(kind: str) -> Planner | None:
    p = PLANNERS.get(kind)
    if isinstance(p, str):
        module, _, name = p.partition(":")
        p = PLANNERS[kind] = getattr(importlib.import_module(module), name)
    return p


# ----------------------------------------------------------------------------------------
# Plans from reference solutions


def solution_plan(task: TaskLike, shell: bool, scratch: Callable[[Any], dict[str, str]] | None = None) -> list[Intent]:
    """Intents that replay `task.solution`; without `shell`, a script's effect as file writes."""
    sol = getattr(task, "solution", None)
    if sol is None:
        raise ConfigError(f"{task.id}: the task ships no solution, so the oracle cannot plan it")
    if sol.script is not None and not shell:
        files = (scratch or scratch_effect)(task)
        return [Intent("write", path=p, content=c) for p, c in files.items()]
    plan = []
    for step in sol.steps:
        if hasattr(step, "old"):
            plan.append(Intent("replace", path=step.path, old=step.old, new=step.new))
        else:
            plan.append(Intent("write", path=step.path, content=step.content))
    if sol.script is not None:
        plan.append(Intent("run", command=sol.script))
    return plan


def scratch_run(task: TaskLike) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, int]]:
    """Run the full solution in a throwaway sandboxed workspace: the files before and after
    ({path: bytes}) and the mode of each file after (executable bits)."""
    import os

    from harnessrl.tasks.runtime import TaskRuntime
    from harnessrl.tasks.sandbox import Sandbox

    with TaskRuntime(task, Sandbox()) as rt:
        before = rt.workspace.snapshot()
        result = rt.apply_solution()
        if result is not None and not result.ok:
            raise RuntimeError(f"{task.id}: solve.sh failed in the scratch run: {result.status} {result.output[-500:]}")
        after = rt.workspace.snapshot()
        modes = {p: os.stat(os.path.join(rt.workspace.root, p), follow_symlinks=False).st_mode for p in after}
    return before, after, modes


def scratch_effect(task: TaskLike) -> dict[str, str]:
    """Run the full solution in a throwaway sandboxed workspace; {path: content} it changed."""
    before, after, _ = scratch_run(task)
    gone = sorted(set(before) - set(after))
    if gone:
        raise ConfigError(f"{task.id}: the solution deletes {gone}; file writes cannot express that")
    return {p: c.decode("utf-8") for p, c in sorted(after.items()) if before.get(p) != c}


def channel(state: AgentState) -> Privileged:
    """The privileged task/session/harness a scripted policy plans from (the rollout fills it)."""
    if state.privileged is None:
        raise RuntimeError(f"{state.task_id}: a scripted policy needs AgentState.privileged; "
                           "run it through rollout.run_group, which fills it for `privileged = True` policies")
    return state.privileged


def render_next(state: AgentState, plan: list[Intent]) -> tuple[str, int]:
    """The harness's text for the next turn of `plan` and how many intents it used."""
    if not plan:
        plan = [Intent("finish", message="Done.")]
    ch = channel(state)
    return ch.harness.render_turn(plan, ch.session)


class PlanPolicy(Policy):
    """Follows a fixed plan per episode (built once, on the first turn), one turn at a time."""

    policy_id = "plan"
    privileged = True  # plans from the task and the live session: scripted, never a learner
    #: follow a kind's reactive planner (MiniWoB pages) instead of `plan`: only oracles do
    uses_planner = False

    def __init__(self) -> None:
        self._scratch: dict[str, dict[str, str]] = {}

    def plan(self, state: AgentState) -> list[Intent]:
        raise NotImplementedError

    def scratch(self, task: TaskLike) -> dict[str, str]:
        if task.id not in self._scratch:
            self._scratch[task.id] = scratch_effect(task)
        return self._scratch[task.id]

    def turn_text(self, state: AgentState) -> str:
        planner = _planner(getattr(channel(state).task, "kind", "")) if self.uses_planner else None
        if planner is not None:  # reactive: re-plan from the live state every turn
            return render_next(state, planner(channel(state)))[0]
        if "plan" not in state.cache:
            state.cache["plan"], state.cache["pos"] = self.plan(state) + [Intent("finish", message="Done.")], 0
        plan, pos = state.cache["plan"], state.cache["pos"]
        text, used = render_next(state, plan[pos:])
        state.cache["pos"] = pos + used
        return text

    def act(self, states: list[AgentState]) -> list[Action]:
        return [Action(self.turn_text(s)) for s in states]


class Oracle(PlanPolicy):
    """Replays the reference solution through the harness."""

    policy_id = "oracle"
    uses_planner = True

    def plan(self, state: AgentState) -> list[Intent]:
        ch = channel(state)
        caps = ch.harness.capabilities
        shell = caps is None or "shell" in caps
        return solution_plan(ch.task, shell, self.scratch)


class Noop(PlanPolicy):
    """Finishes at once: the floor every harness should score (0 on tasks that need work)."""

    policy_id = "noop"

    def plan(self, state: AgentState) -> list[Intent]:
        return []


class Explore(PlanPolicy):
    """Reads every workspace file, then finishes: exercises the read tools, changes nothing."""

    policy_id = "explore"

    def plan(self, state: AgentState) -> list[Intent]:
        workspace = getattr(getattr(channel(state).session, "env", None), "workspace", None)
        return [Intent("read", path=p) for p in (workspace.files()[:8] if workspace is not None else [])]


# ----------------------------------------------------------------------------------------
# Faulty oracles


class DropRequirement(PlanPolicy):
    """Looks busy (a harmless comment in a file the solution touches) but never does the task."""

    policy_id = "oracle-drop"
    injects = "dropped_requirement"

    def injected_fault(self, task: TaskLike) -> str | None:
        return self.injects

    def plan(self, state: AgentState) -> list[Intent]:
        target = _first_python_target(state)
        if target is None:
            return []
        path, text = target
        return [Intent("write", path=path, content=text + "# reviewed\n" if text.endswith("\n") else text + "\n# reviewed\n")]


class BreakExisting(Oracle):
    """Solves the task, then redefines one function that only the regression tests use.

    Tasks whose regression tests use no name the requirement tests leave alone get the plain
    oracle (`injected_fault` says None for them)."""

    policy_id = "oracle-break"
    injects = "broke_existing"

    def injected_fault(self, task: TaskLike) -> str | None:
        return self.injects if regression_only_name(task) is not None else None

    def plan(self, state: AgentState) -> list[Intent]:
        plan = super().plan(state)
        victim = regression_only_name(channel(state).task)
        if victim is None:
            return plan
        module, name = victim
        path = module.replace(".", "/") + ".py"
        final = _final_text(state, plan, path)
        sabotage = f"\n\ndef {name}(*args, **kwargs):\n    raise RuntimeError('broken on purpose')\n"
        return plan + [Intent("write", path=path, content=final.rstrip("\n") + "\n" + sabotage)]


class Malformed(PlanPolicy):
    """Never emits a parsable action."""

    policy_id = "oracle-malformed"
    injects = "format_error"

    def injected_fault(self, task: TaskLike) -> str | None:
        return self.injects

    def turn_text(self, state: AgentState) -> str:
        return MALFORMED


class Typo(Oracle):
    """The oracle with one malformed reply first: must still solve, with one counted format error."""

    policy_id = "oracle-typo"

    def turn_text(self, state: AgentState) -> str:
        if not state.cache.get("typo_done"):
            state.cache["typo_done"] = True
            return MALFORMED
        return super().turn_text(state)


def _first_python_target(state: AgentState) -> tuple[str, str] | None:
    ch = channel(state)
    ws = getattr(getattr(ch.session, "env", None), "workspace", None)
    if ws is None:
        return None
    sol = getattr(ch.task, "solution", None)
    touched = [s.path for s in (sol.steps if sol else ()) if ws.exists(s.path)]
    pyfiles = [p for p in ws.files() if p.endswith(".py")]
    for path in touched + pyfiles:
        return path, ws.read_text(path)
    return None


def _final_text(state: AgentState, plan: list[Intent], path: str) -> str:
    ws = channel(state).session.env.workspace
    text = ws.read_text(path) if ws.exists(path) else ""
    for i in plan:
        if i.args.get("path") != path:
            continue
        text = i.args["content"] if i.kind == "write" else text.replace(i.args["old"], i.args["new"], 1)
    return text


def _imported_names(source: str) -> dict[str, set[str]]:
    """module -> names a test file uses from it (`from m import a` and `m.a` after `import m`)."""
    out: dict[str, set[str]] = {}
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.setdefault(node.module, set()).update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.setdefault(aliases[node.value.id], set()).add(node.attr)
    return out


def regression_only_name(task: TaskLike) -> tuple[str, str] | None:
    """(module, name) used by the regression tests and by no requirement test, if any.

    Read from the hidden tests, which a scripted policy may see (it is not a learner)."""
    groups: dict[str, dict[str, set[str]]] = {}
    for group, files in getattr(task, "test_files", {}).items():
        merged: dict[str, set[str]] = {}
        for rel in files:
            try:
                for m, names in _imported_names((task.tests_dir / rel).read_text(encoding="utf-8")).items():
                    merged.setdefault(m, set()).update(names)
            except (OSError, SyntaxError):
                continue
        groups[group] = merged
    req, reg = groups.get("requirement", {}), groups.get("regression", {})
    ws_dir = getattr(task, "workspace_dir", None)
    for module in sorted(reg):
        if module in ("pytest",) or ws_dir is None or not (ws_dir / (module.replace(".", "/") + ".py")).exists():
            continue
        only = sorted(n for n in reg[module] - req.get(module, set()) if n.isidentifier() and not n.startswith("_"))
        if only:
            return module, only[0]
    return None


POLICIES: dict[str, type[Policy]] = {
    cls.policy_id: cls for cls in (Oracle, Noop, Explore, DropRequirement, BreakExisting, Malformed, Typo)
}
