"""How one episode starts a real agent program in its sandbox, pointed at a model endpoint.

Developer note (for the program harness that drives these):

    sandbox = Sandbox(limits, ro_paths=installed("mini-swe-agent").ro_paths)  # stages the install
    spec = launch_spec("mini-swe-agent", ws, sandbox, task=text, api_key=key, model="smollm2-135m",
                       base_url=f"http://127.0.0.1:{port}/v1")
    proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd,
                         limits=spec.limits, network=net, stdin=False, lifetime_s=...)

`launch_spec` writes the program's input files (task, config, model metadata) into a private
state dir of the workspace (`ws.private_dir("agent")`, on the episode's capped scratch tmpfs),
bound writable at `/agent` inside: HOME, XDG dirs, history and trajectory files live there,
never in `/app` (what the grader sees). The agent's own shell commands can read and write
`/agent` too: the files there (e.g. mini's traj.json) are the program's account, not evidence;
the gateway's records are. The program is run by absolute path; its environment's `bin/` is
never on PATH, so the agent's `python` stays the task's interpreter. Inputs are files at
absolute paths, not names a program would look up in its cwd (mini resolves a relative `-c`
name in the cwd first: `/app/mini_textbased.yaml` would win).

Memory. The sandbox sets RLIMIT_AS (`ulimit -v`, `Limits.memory_mb`) per process; Python
programs with many native libraries and Node (V8 and WebAssembly reserve large address
ranges they never touch) can fail at start under a per-process address-space cap that says
nothing about real use. `program_limits()` lifts RLIMIT_AS to the whole x86-64 user address
space (128 TiB) for the program AND every command it runs, and keeps the real bound where it
belongs: the episode's cgroup (`Limits.episode_memory_mb`, all processes together; cgroup.py).
Where the episode has no memory-limited cgroup (not root, no controllers) it keeps the
sandbox's cap instead and says so in `LaunchSpec.notes`.

What the programs do over HTTP (read from their source at these versions, and checked against
a canned responder in tests/agents/test_programs_start.py):

mini-swe-agent 2.4.6 (text protocol: `mini_textbased.yaml`, model class `litellm_textbased`)
  - `POST {base}/chat/completions` through litellm (openai provider, `openai/NAME`), JSON:
    `model` (NAME without `openai/`), `messages` (system + user, then assistant/user pairs:
    observations are user messages `<returncode>..</returncode><output>..</output>`), no `tools`,
    no `stream`, no `temperature`/`max_tokens`/`stop` unless configured (`model_kwargs`).
  - The episode ends when a command's output starts with the line
    `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (a reply with one block `echo COMPLETE_TASK_AND_...`);
    also after 3 format errors in a row (`RepeatedFormatError`), at `step_limit`, or on an error.
    Exit code 0 for all of those (the reason is `info.exit_status` in /agent/traj.json:
    Submitted, RepeatedFormatError, LimitsExceeded); 1 with a traceback when a model call fails
    for good. A reply without exactly one block is a format error sent back as a user message.
  - Errors: tenacity retries each call up to 10 attempts (`MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT`),
    waits 4..60 s exponential, on ANY exception except these, which end the run at once:
    401 AuthenticationError, 403 PermissionDeniedError, 404 NotFoundError, context-window
    exceeded (a 400 whose message says so), UnsupportedParamsError. A plain 400 or any 5xx/429 is
    retried. Underneath, the openai SDK (max_retries 2) retries 408/409/429/5xx and connection
    errors by itself unless the response has `x-should-retry: false`.
    So a gateway refusal that must end the episode: 401 or 403 (with `x-should-retry: false`).
Aider 0.86.2 (`--edit-format diff`: SEARCH/REPLACE blocks; `--message-file`, no git)
  - `POST {base}/chat/completions` through litellm, JSON: `model`, `messages` (a system prompt,
    example conversation, the files' contents as user/assistant turns, the request), `stream: true`
    (SSE; `stream=False` in launch_spec adds `--no-stream`), `temperature: 0`; no tools.
  - It ends after one request message has been handled: the reply's edits applied (files it
    edits are added to the chat: `--yes-always`), then lint of edited files and, if it finds
    errors, one more round to fix them (aider's own control logic, kept). Exit code 0 whether or
    not any edit applied, and also when the model call failed for good (the error is printed);
    1 only for start-up errors. An edit block that does not apply is sent back to the model
    (up to 3 reflections).
  - Errors: its own loop retries with waits 0.25, 0.5, ... 32 s (about 64 s in all) on
    connection errors, 429, 5xx, 422 and timeouts; it stops at once on 400 BadRequest, 401,
    404 and context-window errors. Each try also goes through the openai SDK's retries (above).
    A gateway refusal: 401, or 400 (both end at once; with `x-should-retry: false`).

Telemetry and update checks are off by construction: aider `--analytics-disable
--no-check-update --no-show-release-notes --no-detect-urls` and a local model-metadata file (else
it downloads litellm's price list); litellm `LITELLM_LOCAL_MODEL_COST_MAP=True`; mini
`MSWEA_CONFIGURED` (no first-run prompt) and cost tracking off for an unpriced model. In the
episode's network namespace nothing but the gateway is reachable anyway.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harnessrl.agents.install import Installed, installed
from harnessrl.agents.registry import program
from harnessrl.config import ConfigError
from harnessrl.tasks.process import Limits
from harnessrl.tasks.sandbox import Sandbox
from harnessrl.tasks.sandbox_cmdline import Bind
from harnessrl.tasks.workspace import APP, Workspace

STATE = "/agent"  # the program's own writable dir inside the sandbox (HOME, config, outputs)
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
    `options`: mini-swe-agent `step_limit`, `command_timeout_s`; aider-cli `files` (paths under
    /app to add to the chat), `stream`, `context_window`, `max_output_tokens`, `timeout_s`."""
    prog = installed(name)
    build = _BUILDERS.get(program(name).name)
    if build is None:
        raise ConfigError(f"agent program {name!r}: installed, but no launch is defined for it yet")
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


def _write(path: Path, text: str) -> str:
    """Write an input file (root-owned, world-readable) into the state dir; its path inside."""
    path.write_text(text)
    path.chmod(0o644)
    return f"{STATE}/{path.name}"


def _mini(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
          step_limit: int = 0, command_timeout_s: int = 60) -> tuple[list[str], dict, dict]:
    builtin = next(prog.env.glob("lib/python*/site-packages/minisweagent/config/mini_textbased.yaml"), None)
    if builtin is None:
        raise ConfigError(f"agent program {prog.spec.name!r}: mini_textbased.yaml not found in {prog.env}")
    episode = {  # JSON is YAML: one more config, merged over the text protocol's
        "run": {"task": task},
        "agent": {"mode": "yolo", "confirm_exit": False, "step_limit": step_limit, "cost_limit": 0},
        "model": {"model_class": "litellm_textbased", "model_name": f"openai/{model}", "cost_tracking": "ignore_errors",
                  "model_kwargs": {"api_base": base_url, "api_key": api_key}},
        "environment": {"environment_class": "local", "cwd": APP, "timeout": command_timeout_s},
    }
    config = _write(state / "episode.yaml", json.dumps(episode, indent=1))
    # -o on the command line: the CLI's default output path would override the config's
    argv = [str(prog.executable), "-c", str(builtin), "-c", config, "-o", f"{STATE}/traj.json", "--exit-immediately",
            "-y"]
    env = {"MSWEA_CONFIGURED": "true", "MSWEA_GLOBAL_CONFIG_DIR": f"{STATE}/config",
           "MSWEA_COST_TRACKING": "ignore_errors", "MSWEA_SILENT_STARTUP": "1"}
    return argv, env, {"trajectory": f"{STATE}/traj.json"}


def _aider(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           files: Sequence[str] = (), stream: bool = True, context_window: int = 8192,
           max_output_tokens: int = 2048, timeout_s: int = 600) -> tuple[list[str], dict, dict]:
    message = _write(state / "message.md", task)
    full = f"openai/{model}"
    meta = {full: {"max_input_tokens": context_window, "max_output_tokens": max_output_tokens,
                   "max_tokens": max_output_tokens, "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                   "litellm_provider": "openai", "mode": "chat"}}
    metadata = _write(state / "model-metadata.json", json.dumps(meta))
    conf = _write(state / "aider.conf.yml", "{}\n")  # an empty mapping: the only config it reads
    argv = [str(prog.executable), "--model", full, "--openai-api-base", base_url, "--openai-api-key", api_key,
            "--edit-format", "diff", "--message-file", message, "--yes-always",
            "--no-git", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore",
            "--analytics-disable", "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings",
            "--no-detect-urls", "--disable-playwright", "--no-suggest-shell-commands", "--no-fancy-input",
            "--no-pretty", "--map-tokens", "0", "--encoding", "utf-8", "--timeout", str(timeout_s),
            "--config", conf, "--env-file", f"{STATE}/aider.env", "--model-metadata-file", metadata,
            "--input-history-file", f"{STATE}/input.history", "--chat-history-file", f"{STATE}/chat.history.md",
            "--llm-history-file", f"{STATE}/llm.history",
            *([] if stream else ["--no-stream"]), *files]
    return argv, {"AIDER_ANALYTICS": "false", "AIDER_CHECK_UPDATE": "false"}, {
        "chat_history": f"{STATE}/chat.history.md", "llm_history": f"{STATE}/llm.history"}


_BUILDERS = {"mini-swe-agent": _mini, "aider-cli": _aider}

__all__ = ["LaunchSpec", "STATE", "WHOLE_ADDRESS_SPACE_MB", "launch_spec", "program_limits"]
