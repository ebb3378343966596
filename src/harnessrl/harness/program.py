"""A real agent program as a harness: each model call it makes is one turn of a `Session`.

    harness = make_harness("mini-swe-agent")           # specs/programs/*.toml, style per program
    run_group(policy, [RolloutItem(harness, task, seed)])   # the ordinary rollout loop

How an episode runs:
  1. `start` makes the episode's loopback-only network namespace (tasks/netns.py), a gateway
     (harnessrl.gateway) on a listener the host creates inside it, with a fresh api key, and
     starts the program in the episode's sandbox, joined to that namespace, stdin /dev/null,
     its state outside /app (agents/launch.py). Without root (`options.network = "unix"`, or
     "auto" as a user) the gateway listens on a per-episode Unix socket instead and a forwarder
     inside the sandbox serves it on the sandbox's loopback (tasks/unix_net.py; weaker, see
     there). `ready` waits for the program's first call
     (the loop starts every program of a group first, then waits for each).
  2. `messages` is the pending call's conversation as text (_program_wire.py: tools rendered
     Hermes-style), so the policy answers it like any harness turn; the lockstep loop batches
     the pending calls of a whole group into one `policy.act`.
  3. Stepping has two phases (`send`, then `receive`): `send` answers the call, and the
     program goes on (runs its tools) at once; `receive` waits for its next call or its exit.
     The loop sends every answer of a turn before it waits for any session, so the programs
     of a group run their tools at the same time.
  4. The episode ends when the program exits, or a budget is spent: calls (`max_turns`),
     generated tokens (`max_tokens`), the program's own wall time outside the model queue from
     its first call on (`wall_s`), or its start-up before that first call (`startup_s`). Start-up
     has its own budget because it is the part a loaded machine stretches most (OpenHands'
     imports: about 30 s idle, many minutes for a niced process on a busy machine); counted
     against `wall_s`, it ended episodes before their first call. Then the program is killed
     (its whole sandbox), the gateway refuses whatever comes later, and the grader scores the
     workspace like any harness's.

Per call the session keeps a record (`Verdict.info["calls"]`): what the program asked for
(sampling settings, tools, stop), what the policy used, main-line or auxiliary (a call whose
first message differs from the first call's, e.g. a summary), tokens, the time the call spent
in the model queue, and whether a tool call failed to parse (counted as a format error). The
tokens themselves are the turn's `token_ids`/`logprobs`/`loss_mask`, as for every harness.

A program that dies (a crash, `kill -9`) ends its episode with status `crash` and the exit in
`Verdict.info["program_exit"]`; cleanup is tied to the workspace, so nothing outlives it.

Every program is this one class: its style (`aider_cli`, `mini_swe_agent`, ...) is a subclass
made from its `harnessrl.programs` module (`program_style`), which gives the pin, the launch and
the tool table that the one renderer (_program_render.py) writes scripted intents in. The
harness never parses the model's text (it is no TextHarness): the program does.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from harnessrl.config import ConfigError
from harnessrl.gateway import Call, Gateway, Limits
from harnessrl.gateway.openai_wire import call_limits, cut_at_stop, requested_sampling
from harnessrl.harness import _program_render as render
from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeTools
from harnessrl.harness._program_wire import to_reply, to_text, upstream_reply
from harnessrl.harness.base import HARNESS_STYLES, Intent, Session, StepResult, Verdict, register_style
from harnessrl.programs import PROGRAMS, Program, by_style
from harnessrl.programs import program as program_named

POLL_S = 0.02
_SANDBOXES: dict[tuple[int, str], Any] = {}
_SANDBOX_LOCK = threading.Lock()


class ProgramHarness(CodeTools):
    """A real agent program as a harness; each program's style is a subclass (`program_style`)."""

    default_program: ClassVar[str]  # the program's name (harnessrl.programs)
    session_class: ClassVar[type[Session]]

    def __init__(self, spec: Any):
        from harnessrl.tasks.unix_net import network_mode

        super().__init__(spec)
        network_mode(spec.options.get("network", "auto"))  # a bad value is a config error before any episode
        self.gateway_limits = Limits.from_options(spec.options)  # options.gateway.*: the same
        self.definition: Program = program_named(self.default_program)  # its tool table, even when `script` runs
        self.table = self.definition.tools
        self._blocks = render.EditBlocks(spec.id) if self.table.wire == "search_replace" else None

    @property
    def program(self) -> str:
        """The registry name, or "script": spec option `script`, one stdlib-only Python file
        (a user's own program; the tests use one that speaks mini-swe-agent's text protocol)."""
        return str(self.spec.options.get("program", self.default_program))

    def expressible(self, intent: Intent) -> bool:
        """What a scripted policy can do through the program's tools: the kinds its tool table writes."""
        if self._blocks is not None:
            return self._blocks.expressible(intent)
        return intent.kind in self.table.kinds

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        if self._blocks is not None:
            return self._blocks.render_turn([intent], session)[0]
        return render.render_intent(self.table, intent, session, self.style)

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        if self._blocks is not None:
            return self._blocks.render_turn(intents, session)
        return render.render_turn(self.table, intents, session, self.style)

    def launch(self, session: "ProgramSession", base_url: str, api_key: str) -> Any:
        """Start the program in the episode's sandbox, in its network namespace; a SandboxProcess."""
        env, o = session.env, self.spec.options
        lifetime = startup_budget(o) + float(o.get("wall_s", 1800)) + float(o.get("queue_s", 3600))
        if self.program == "script":  # a user's own program: one Python file, standard library only
            src = Path(o["script"]).expanduser()
            state = env.workspace.private_dir("agent")
            shutil.copy(src, state / "program.py")
            (state / "program.py").chmod(0o644)
            from harnessrl.tasks.sandbox import Bind

            return env.sandbox.spawn(
                ["python3", "/agent/program.py"], env.workspace, lifetime_s=lifetime, network=session.net, stdin=False,
                binds=[Bind(state, "/agent", writable=True)],
                env={"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key, "OPENAI_MODEL": self.model_name,
                     "TASK": session.task.instruction.strip(), "HOME": "/agent"})
        from harnessrl.agents.install import installed
        from harnessrl.agents.launch import launch_spec

        sandbox = program_sandbox(self.program, installed(self.program).ro_paths, env.sandbox)
        spec = launch_spec(self.program, env.workspace, sandbox, task=session.task.instruction.strip(),
                           base_url=base_url, api_key=api_key, model=self.model_name,
                           **{**session.launch_options(), **dict(o.get("launch", {}))})
        session.notes += list(spec.notes)
        return sandbox.spawn(list(spec.argv), env.workspace, env=spec.env, binds=spec.binds, cwd=spec.cwd,
                             limits=spec.limits, network=session.net, stdin=False, lifetime_s=lifetime)

    @property
    def model_name(self) -> str:
        return str(self.spec.options.get("model_name", "harnessrl-policy"))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its spec: a worker process builds it again, finding its program (and a program
        from an installed package) by name, as the parent did."""
        from harnessrl.harness.base import make_harness

        return make_harness, (self.spec,)


def program_style(prog: Program) -> type[ProgramHarness]:
    """The harness style that runs `prog` (registered under `prog.style`): its tools from its table."""
    cls = HARNESS_STYLES.get(prog.style)
    if cls is not None and issubclass(cls, ProgramHarness) and cls.default_program == prog.name:
        return cls
    if cls is not None:
        raise ConfigError(f"agent program {prog.name!r}: its style {prog.style!r} is taken by {cls.__name__}")
    name = "".join(part.title() for part in prog.style.split("_")) + "Harness"
    cls = type(name, (ProgramHarness,), {
        "style": prog.style, "default_program": prog.name, "all_tools": tuple(prog.tools.tools),
        "tool_capabilities": dict(prog.tools.tools), "session_class": ProgramSession, "__module__": __name__,
        "__doc__": f"{prog.description} (harnessrl.programs: {prog.name} {prog.version})"})
    globals().setdefault(name, cls)  # importable by name, as a class written here would be
    return register_style(cls)


def style_of_program(style: str) -> type[ProgramHarness] | None:
    """The style of a program from an installed package, by its style name; None when no program has it."""
    prog = by_style(style)
    return None if prog is None else program_style(prog)


def startup_budget(options: Any) -> float:
    """Seconds a program may take from its launch to its first call (`options.startup_s`)."""
    return float(options.get("startup_s", 1800))


def program_sandbox(name: str, ro_paths: Any, task_sandbox: Any) -> Any:
    """One sandbox per process and program (its install trees mounted read-only), hiding what
    the task's own sandbox hides (hidden tests and solutions)."""
    from harnessrl.tasks.sandbox import Sandbox

    with _SANDBOX_LOCK:
        key = (os.getpid(), name)
        if key not in _SANDBOXES:
            _SANDBOXES[key] = Sandbox(task_sandbox.limits, ro_paths=ro_paths)
        sandbox = _SANDBOXES[key]
        sandbox.hide(*task_sandbox.hidden)
    return sandbox


class ProgramSession(Session):
    harness: ProgramHarness

    def __init__(self, harness: ProgramHarness, task: Any, env: Any, seed: int):
        super().__init__(harness, task, env, seed)
        self.net = self.gateway = self.proc = None
        self.pending: Call | None = None
        self.calls: list[dict[str, Any]] = []
        self.issued: dict[str, str] = {}
        self.notes: list[str] = []
        self.stop_reason = ""
        self.program_exit: int | None = None
        self.tokens = 0
        self.queue_s = 0.0
        self.first_call_at: float | None = None  # wall_s counts from here; before it, startup_s
        self.read_paths: set[str] = set()  # files the scripted replies had the program read (_program_render)
        self.launch_opts: dict[str, Any] = {}
        self._first: dict[str, Any] | None = None
        self._closed = False

    def opt(self, name: str, default: Any) -> Any:
        return self.harness.spec.options.get(name, default)

    def call_limits(self) -> tuple[int | None, tuple[str, ...]]:
        """The pending call's `max_tokens` cap and `stop` strings (the loop hands them to the policy)."""
        return call_limits(self.pending.request) if self.pending is not None else (None, ())

    def launch_options(self) -> dict[str, Any]:
        """Per-episode options for the program's launch (agents/launch.py), from the workspace's files
        where the program asks for them (`Program.session_options`: Aider's chat files)."""
        hook = self.harness.definition.session_options
        self.launch_opts = hook(self.env.workspace.files()) if hook is not None else {}
        return self.launch_opts

    # -- start: network, gateway, program, first call ---------------------------------------

    def start(self) -> list[dict[str, str]]:
        from harnessrl.tasks.unix_net import open_network

        self.env.workspace.on_close(self.close)  # whatever happens to the episode, nothing outlives it
        # options.network: the episode's own network namespace (root), or a Unix socket and a forwarder
        self.net = open_network(self.opt("network", "auto"), self.env.workspace)
        self.gateway = Gateway(api_key="sk-hrl-" + secrets.token_urlsafe(24), model=self.harness.model_name,
                               sock=self.net.listen(), limits=self.harness.gateway_limits,
                               max_calls=self.harness.spec.max_turns, url=getattr(self.net, "base_url", None)).start()
        self.started = time.monotonic()
        self.proc = self.harness.launch(self, self.gateway.base_url, self.gateway.api_key)
        return self.messages

    @property
    def request(self) -> dict[str, Any] | None:
        """The pending call as the program sent it (forward mode sends it upstream unchanged)."""
        return self.pending.request if self.pending is not None else None

    def ready(self) -> None:
        """Wait for the program's first call (or its exit): then `messages` is that call's."""
        if self.pending is None and not self.done:
            self._wait()

    # -- the two phases of a step -------------------------------------------------------------

    def send(self, text: str, action: Any = None) -> None:
        """Answer the pending call with the policy's text; the program goes on at once."""
        call = self.pending
        if call is None:
            return
        upstream = (getattr(action, "info", None) or {}).get("upstream_message")
        if upstream is not None:  # forward mode: the upstream parsed its own tool calls; they go back as they came
            reply, unparsed = upstream_reply(upstream, action.info.get("finish_reason")), False
        else:
            # the program's stop strings, as a provider honours them: the reply is cut at the first one
            # (every sampled token stays in the record; the next call then rewrites history: a new row)
            text, stopped = cut_at_stop(text, call_limits(call.request)[1])
            reply, unparsed = to_reply(text, call.request, self.issued)
            if not reply.tool_calls:
                reply.finish_reason = "length" if getattr(action, "truncated", False) and not stopped else "stop"
        n_out = int(action.loss_mask.sum()) if action is not None and len(getattr(action, "loss_mask", ())) else 0
        reply.prompt_tokens = int(getattr(action, "prompt_tokens", 0) or 0)
        reply.completion_tokens = n_out
        self.tokens += n_out
        waited = time.monotonic() - call.received
        self.queue_s += waited
        self.calls.append({
            "call": len(self.calls), "id": call.id,
            "line": "main" if self._main_line(call) else "auxiliary",
            "requested": requested_sampling(call.request), "stream": bool(call.request.get("stream")),
            "tools": [t["function"]["name"] for t in call.request.get("tools") or []],
            "used": {k: v for k, v in (getattr(action, "info", None) or {}).items()
                     if k in ("temperature", "top_p", "top_k", "max_new_tokens")},
            "finish_reason": reply.finish_reason,
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": n_out, "queue_s": round(waited, 4),
            "tool_calls": len(reply.tool_calls), "unparsed_tool_call": unparsed,
        })
        self.pending = None
        self.gateway.answer(call, reply)
        if unparsed:
            self.format_errors += 1
        self.turn += 1
        if self.turn >= self.harness.spec.max_turns:
            self._stop("turn budget spent", "turn_limit")
        elif self.tokens >= int(self.opt("max_tokens", 1 << 30)):
            self._stop("token budget spent", "token_limit")

    def receive(self) -> StepResult:
        """Wait for the program's next call or its exit; the step's result."""
        last = self.calls[-1] if self.calls else {}
        if not self.done:
            self._wait()
        status = "format_error" if last.get("unparsed_tool_call") else "ok"
        return StepResult(observation="" if self.done else self.messages[-1]["content"], status=status,
                          tool_result=self.stop_reason if self.done else "", done=self.done)

    def step(self, text: str) -> StepResult:
        self.send(text)
        return self.receive()

    def _wait(self) -> None:
        """Block until the program calls (then `messages` is that call's) or exits, or a budget ends it."""
        wall_s, startup_s = float(self.opt("wall_s", 1800)), startup_budget(self.harness.spec.options)
        while True:
            call = self.gateway.next_call(timeout=POLL_S)
            if call is not None:
                if self.first_call_at is None:
                    self.first_call_at = call.received
                self.pending = call
                self.messages = to_text(call.request, self.issued)
                return
            if not self.proc.alive:
                self.program_exit = self.proc.close()
                ok = self.program_exit == 0
                self._stop(f"program exited ({self.program_exit})", "ok" if ok else "crash")
                return
            now = time.monotonic()
            if self.first_call_at is None:
                if now - self.started > startup_s:
                    self._stop(f"start-up budget of {startup_s:g} s spent before the program's first call", "timeout")
                    return
            elif now - self.first_call_at - self.queue_s > wall_s:
                self._stop(f"wall-time budget of {wall_s:g} s spent", "timeout")
                return

    @property
    def startup_seconds(self) -> float | None:
        """Launch to first call, in seconds (None: the program never called)."""
        return None if self.first_call_at is None else round(self.first_call_at - self.started, 3)

    def _main_line(self, call: Call) -> bool:
        first = call.request["messages"][0]
        if self._first is None:
            self._first = first
        return first == self._first

    def _stop(self, reason: str, status: str) -> None:
        self.done, self.stop_reason = True, reason
        if status != "ok":
            self.stop_status = status
        self.gateway.spend(reason)

    # -- the end ----------------------------------------------------------------------------

    def close(self) -> None:
        """Kill the program (its whole sandbox), close the gateway and the namespace. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.proc is not None:
            code = self.proc.close()
            if self.program_exit is None and not self.done:
                self.program_exit = code
        if self.gateway is not None:
            self.gateway.close(self.stop_reason or "episode ended")
        if self.net is not None:
            self.net.close()

    def finish(self) -> Verdict:
        output = self.proc.read() if self.proc is not None else ""
        self.close()
        score = ws.score(self.env)
        info = dict(score.info)
        info.update(stop_reason=self.stop_reason, program=self.harness.program, program_exit=self.program_exit,
                    program_output=output[-4000:], calls=self.calls, startup_s=self.startup_seconds, notes=self.notes,
                    # the first refusals as (status, code, reason), bounded; every one in the counts by kind
                    refusals=[(r.status, r.code, r.reason) for r in self.gateway.refusals],
                    refusal_counts=self.gateway.refusal_counts,
                    unparsed_tool_calls=sum(c["unparsed_tool_call"] for c in self.calls))
        return Verdict(reward=1.0 if score.solved else 0.0, success=score.solved, outcome=score.outcome,
                       status="ok", info=info)


ProgramHarness.session_class = ProgramSession
for _prog in PROGRAMS.values():
    program_style(_prog)
