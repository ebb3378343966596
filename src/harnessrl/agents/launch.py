"""How one episode starts a real agent program in its sandbox, pointed at a model endpoint.

    sandbox = Sandbox(limits, ro_paths=installed("mini-swe-agent").ro_paths)  # stages the install
    spec = launch_spec("mini-swe-agent", ws, sandbox, task=text, api_key=key, model="smollm2-135m",
                       base_url=f"http://127.0.0.1:{port}/v1")
    proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd,
                         limits=spec.limits, network=net, stdin=False, lifetime_s=...)

The program's own part (argv, environment, the input files it reads) is its module's `launch`
(harnessrl.programs.<name>); this module adds what every program gets. Its state dir is private
to the workspace (`ws.private_dir("agent")`, on the episode's capped scratch tmpfs), bound
writable at `/agent` inside: HOME, XDG dirs, history and trajectory files live there, never in
`/app` (what the grader sees). The agent's own shell commands can read and write `/agent` too:
the files there (e.g. mini's traj.json) are the program's account, not evidence; the gateway's
records are. The program is run by absolute path; its environment's `bin/` is never on PATH,
so the agent's `python` stays the task's interpreter.

Memory. The sandbox sets RLIMIT_AS per process (`Limits.memory_mb`); Python programs with many
native libraries and Node (V8 and WebAssembly reserve large address ranges they never touch)
can fail at start under a per-process address-space cap that says nothing about real use.
`program_limits()` lifts RLIMIT_AS to the whole x86-64 user address space for the program AND
every command it runs, and keeps the real bound where it belongs: the episode's cgroup
(`Limits.episode_memory_mb`, all processes together; cgroup.py). Where the episode has no
memory-limited cgroup it keeps the sandbox's cap and says so in `LaunchSpec.notes`. What was
measured (Node under each cap, what each program sends, how each ends and retries, telemetry
switched off): docs/real-harnesses.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from harnessrl.agents.install import installed
from harnessrl.programs import program
from harnessrl.programs.base import STATE
from harnessrl.tasks.process import Limits
from harnessrl.tasks.sandbox import Sandbox
from harnessrl.tasks.sandbox_cmdline import Bind
from harnessrl.tasks.workspace import APP, Workspace

WHOLE_ADDRESS_SPACE_MB = 1 << 27  # 128 TiB: x86-64's user address space, i.e. no RLIMIT_AS in effect


@dataclass(frozen=True)
class LaunchSpec:
    """Everything `Sandbox.spawn` needs to start one program for one episode."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    binds: tuple[Bind, ...]  # the writable state dir at /agent
    ro_paths: tuple[Path, ...]  # install trees: give them to Sandbox(ro_paths=...)
    limits: Limits  # the caller's limits with RLIMIT_AS lifted (module docstring)
    cwd: str = APP
    state_dir: Path | None = None  # host path of /agent
    outputs: Mapping[str, str] = field(default_factory=dict)  # what the program leaves: name -> path inside
    notes: tuple[str, ...] = ()


def program_limits(sandbox: Sandbox, ws: Workspace, limits: Limits | None = None) -> tuple[Limits, tuple[str, ...]]:
    """`limits` (default: the sandbox's) with the per-process address-space cap lifted when the
    episode's cgroup bounds the memory of all its processes; unchanged, with a note, otherwise."""
    limits = limits or sandbox.limits
    cg = sandbox.cgroup(ws)
    if cg is not None and cg.limited:
        return replace(limits, memory_mb=WHOLE_ADDRESS_SPACE_MB), ()
    return limits, (f"no memory-limited episode cgroup: RLIMIT_AS stays {limits.memory_mb} MB per process "
                    "(a Node program may not start under it)",)


def launch_spec(name: str, ws: Workspace, sandbox: Sandbox, *, task: str, base_url: str, api_key: str,
                model: str, limits: Limits | None = None, **options) -> LaunchSpec:
    """The launch of program `name` for the episode in `ws`, run by `sandbox` (module
    docstring). `base_url` ends in `/v1`; `model` is the name the endpoint serves. Per-program
    `options` (each program module's `launch`): mini-swe-agent `step_limit`, `command_timeout_s`; aider-cli `files` (paths under
    /app to add to the chat), `stream`, `context_window`, `max_output_tokens`, `timeout_s`;
    qwen-code-cli `max_turns`, `managed_memory`, `core_tools`, `exclude_tools`, `system_prompt`,
    `settings` (merged into its settings.json); openhands-cli `agent` (its saved agent settings);
    opencode-cli `context_window`, `max_output_tokens`, `config` (merged into its opencode.json);
    codex-cli `config` (more `-c key=value` overrides)."""
    prog = installed(name)
    build = program(name).launch
    host_state = ws.private_dir("agent")
    for sub in ("home", "config", "cache", "data"):
        d = host_state / sub
        d.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(d, ws.uid, ws.gid)
    env = {
        "HOME": f"{STATE}/home", "XDG_CONFIG_HOME": f"{STATE}/config", "XDG_CACHE_HOME": f"{STATE}/cache",
        "XDG_DATA_HOME": f"{STATE}/data", "NO_COLOR": "1", "TERM": "dumb", "PYTHONDONTWRITEBYTECODE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "*", "no_proxy": "*",
    }
    argv, extra_env, outputs = build(prog, host_state, task=task, base_url=base_url.rstrip("/"), api_key=api_key,
                                     model=model, **options)
    lim, notes = program_limits(sandbox, ws, limits)
    return LaunchSpec(argv=tuple(argv), env={**env, **extra_env}, binds=(Bind(host_state, STATE, writable=True),),
                      ro_paths=prog.ro_paths, limits=lim, state_dir=host_state, outputs=outputs, notes=notes)


__all__ = ["LaunchSpec", "STATE", "WHOLE_ADDRESS_SPACE_MB", "launch_spec", "program_limits"]
