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
sandbox's cap instead and says so in `LaunchSpec.notes`. Measured with Qwen Code (Node 20) and a
canned endpoint: RLIMIT_AS 1 GiB -> V8 aborts (exit 134); 4, 8 and 16 GiB -> it starts but every
request fails inside Node ("fetch failed": undici's WebAssembly reserves address space), so the
endpoint sees nothing; 64 GiB and the lifted limit -> it works. The Python programs start under
1 GiB. (tests/agents/test_programs_start.py::test_node_needs_the_lifted_address_space)

What the programs send and how they end. Read from their source at these versions, then
MEASURED with the canned responder (tests/agents/test_programs_start.py; the error table by
answering every call with one status, `x-should-retry` absent unless said). The first four use the
OpenAI SDK underneath (Python: through litellm), which retries 408/409/429/5xx and connection
errors twice by itself (0.5-1 s apart) unless the response carries `x-should-retry: false`, and
sends `x-stainless-retry-count`. A refusal that ends the episode at once, after ONE request, in
all four programs: 401 or 404 (send `x-should-retry: false` too). 5xx and 429 are retried.
Exit codes do NOT tell a refused episode from a finished one (aider and OpenHands exit 0 either
way): the gateway must record why it refused.

mini-swe-agent 2.4.6 (text protocol: `mini_textbased.yaml`, model class `litellm_textbased`)
  - `POST {base}/chat/completions`, non-streaming, body exactly `{"model": NAME, "messages"}`
    (no tools, stream, temperature, max_tokens or stop). Messages: system, user (task), then
    assistant / user pairs; an observation is a user message `<returncode>N</returncode>
    <output>...</output>`; a format error is a user message too.
  - Ends when a command's output starts with the line `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`
    (a reply whose one block is `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`), after 3 format
    errors in a row, or at `step_limit`: exit 0, the reason in /agent/traj.json
    `info.exit_status` (Submitted, RepeatedFormatError, LimitsExceeded). A model call that fails
    for good: exit 1 with a traceback.
  - Errors (tenacity around each call: up to 10 attempts, `MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT`,
    4-60 s exponential waits). Measured with 2 attempts: 401 and 404 -> 1 request, exit 1;
    400, 403, 422 -> retried (2 requests, 4 s apart); 429 and 500 -> 6 requests (SDK x attempts);
    500 with `x-should-retry: false` -> 2. With the default 10 attempts a retried status keeps
    it busy for minutes.
Aider 0.86.2 (`--edit-format diff`: SEARCH/REPLACE blocks; `--message-file`, no git)
  - `POST {base}/chat/completions`, body `{"model", "messages", "stream": true, "temperature": 0}`
    (SSE; `stream=False` adds `--no-stream`); no tools, max_tokens or stop. Messages: system
    (the diff-format rules), example user/assistant turns, the added files' contents, the request.
  - Ends after the one request message is handled: edits applied (files named in a block are
    added: `--yes-always`), edited files linted, and if lint fails one more round (aider's own
    control logic, kept). A block that does not apply is sent back (up to 3 reflections).
    Exit 0 in all these cases, and also when a model call failed for good (the error is
    printed); 1 only for start-up errors.
  - Errors (its loop: waits 0.25 s doubling to 32 s, ~64 s in all, for errors it deems
    retryable). Measured, streaming: 400, 401, 403, 404 -> 1 request, exit 0; 500 -> 3
    requests (SDK), exit 0; 500 + `x-should-retry: false` -> 1; 429 -> 27 requests over 76 s,
    exit 0; 422 -> 2 requests, then it crashes on the empty reply, exit 0.
Qwen Code 0.24.4 (`qwen "<task>" --approval-mode yolo --auth-type openai`; OpenAI tool calls)
  - `POST {base}/chat/completions`, body `{"model", "messages", "tools" (14 functions: edit,
    read_file, write_file, run_shell_command, glob, grep_search, agent, skill, ...), "stream":
    true, "stream_options": {"include_usage": true}, "max_tokens": 32000}`. User content is a
    LIST of parts (`[{"type": "text", "text": ...}]`), the system prompt ~27k characters and the
    tool schemas ~38k: far beyond an 8k-token model. Tool results come back as `tool` messages
    with the call's id. After the main line ends it makes an AUXILIARY call (system prompt
    "managed memory extraction subagent", 6 tools), unless `managed_memory=False`.
  - Ends when a reply has no tool call: exit 0; `--max-session-turns`, `--max-wall-time`,
    `--max-tool-calls` end it with exit 55 (documented in its help).
  - Errors: 400, 401, 403, 404, 422 -> 1 request, exit 1 (`[API Error: N ...]`); 500 -> 7
    attempts x 4 requests over ~104 s, exit 1; 500 + `x-should-retry: false` -> 7 requests over
    66 s; 429 -> still retrying after 150 s (28 requests), up to 10 attempts 60 s apart.
  - Its package declares Node >= 22; it runs on Node 20 here. Memory is per the cgroup (above).

OpenHands CLI 1.16.0 (Python 3.12; `openhands --headless --file F --always-approve
--override-with-envs`, model from LLM_MODEL / LLM_BASE_URL / LLM_API_KEY; CodeAct tool calls)
  - `POST {base}/chat/completions`, non-streaming, body `{"model", "messages", "tools"
    (terminal, file_editor, task_tracker, task, finish, think), "reasoning_effort": "high",
    "prompt_cache_key": <conversation id>}`; system and user content are LISTS of parts; the
    task arrives as "Starting this session with file context ... File contents: ...". Tool
    results come back as `tool` messages.
  - Ends on a `finish` tool call or a reply without a tool call: exit 0 (about 30 s of start-up
    here). At start it tries to `git clone` its public skills repository: in the episode's
    network namespace that fails (logged) and it goes on without them.
  - Errors (litellm; its own tenacity: 5 retries, 8-64 s waits, on connection errors, 429, 500,
    503, timeouts and empty replies). Measured: 400, 401, 404, and 500 with `x-should-retry:
    false` -> 1 request, and exit 0 (it prints the error and ends the conversation).
opencode 1.18.33 (`opencode run --title episode --auto`, the task on stdin; its own Bun executable)
  - `POST {base}/chat/completions` through the AI SDK's openai-compatible client, streamed, body
    `{"model", "max_tokens" (the model's configured output limit), "messages", "tools" (bash,
    edit, glob, grep, read, skill, task, todowrite, write), "tool_choice": "auto", "stream",
    "stream_options"}`. A prompt ARGUMENT is changed (each argument with a space is wrapped in
    quotes), stdin is not; an untitled session makes a title-generation call first.
  - Ends when a reply has no tool call: exit 0.
Codex CLI 0.171.0 (`codex exec ... -`, the task on stdin; Node launches its Rust binary)
  - `POST {base}/responses` ONLY (`wire_api = "chat"` is a config error at this version), streamed;
    the gateway serves it by translation (gateway/responses_wire.py). Function tools
    exec_command, write_stdin, request_user_input, view_image and three goal tools.
  - Ends when a reply has no function call: exit 0. A reply cut at its length (status
    `incomplete`, as the API sends it) ends it too: exit 1. A 404 is retried 5 times, then exit 1.
Telemetry and update checks are off by construction: aider `--analytics-disable
--no-check-update --no-show-release-notes --no-detect-urls` and a local model-metadata file (else
it downloads litellm's price list); litellm `LITELLM_LOCAL_MODEL_COST_MAP=True`; mini
`MSWEA_CONFIGURED` (no first-run prompt) and cost tracking off for an unpriced model; Qwen Code
`~/.qwen/settings.json` with usage statistics, telemetry and auto-update off; opencode's
OPENCODE_DISABLE_* variables; Codex `check_for_update_on_startup = false`. In the episode's
network namespace nothing but the gateway is reachable anyway.
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
    /app to add to the chat), `stream`, `context_window`, `max_output_tokens`, `timeout_s`;
    qwen-code-cli `max_turns`, `managed_memory`, `core_tools`, `exclude_tools`, `system_prompt`,
    `settings` (merged into its settings.json); openhands-cli `agent` (its saved agent settings);
    opencode-cli `context_window`, `max_output_tokens`, `config` (merged into its opencode.json);
    codex-cli `config` (more `-c key=value` overrides)."""
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


def _write(state: Path, rel: str, text: str) -> str:
    """Write an input file (root-owned, world-readable) into the state dir; its path inside."""
    path = state / rel
    path.write_text(text)
    path.chmod(0o644)
    return f"{STATE}/{rel}"


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
    config = _write(state, "episode.yaml", json.dumps(episode, indent=1))
    # -o on the command line: the CLI's default output path would override the config's
    argv = [str(prog.executable), "-c", str(builtin), "-c", config, "-o", f"{STATE}/traj.json", "--exit-immediately",
            "-y"]
    env = {"MSWEA_CONFIGURED": "true", "MSWEA_GLOBAL_CONFIG_DIR": f"{STATE}/config",
           "MSWEA_COST_TRACKING": "ignore_errors", "MSWEA_SILENT_STARTUP": "1"}
    return argv, env, {"trajectory": f"{STATE}/traj.json"}


def _aider(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           files: Sequence[str] = (), stream: bool = True, context_window: int = 8192,
           max_output_tokens: int = 2048, timeout_s: int = 600) -> tuple[list[str], dict, dict]:
    message = _write(state, "message.md", task)
    full = f"openai/{model}"
    meta = {full: {"max_input_tokens": context_window, "max_output_tokens": max_output_tokens,
                   "max_tokens": max_output_tokens, "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                   "litellm_provider": "openai", "mode": "chat"}}
    metadata = _write(state, "model-metadata.json", json.dumps(meta))
    conf = _write(state, "aider.conf.yml", "{}\n")  # an empty mapping: the only config it reads
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


def _qwen(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
          max_turns: int | None = None, managed_memory: bool = True, core_tools: Sequence[str] = (),
          exclude_tools: Sequence[str] = (), system_prompt: str | None = None,
          settings: Mapping | None = None) -> tuple[list[str], dict, dict]:
    # ~/.qwen/settings.json: what its flags do not cover. `settings` (the qwen-code-cli-8k spec:
    # its context window, no startup context, no skills) is merged over it; `system_prompt`
    # replaces the program's through QWEN_SYSTEM_MD, its documented override
    base = {
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "openai"}}, "model": {"name": model},
        "memory": {"enableManagedAutoMemory": managed_memory},
    }
    settings = _merged(base, settings or {})
    qwen_home = state / "home" / ".qwen"
    qwen_home.mkdir(exist_ok=True)
    _write(state, "home/.qwen/settings.json", json.dumps(settings, indent=1))
    if os.geteuid() == 0:  # the program's own config: it rewrites it (migrations)
        for p in (qwen_home, qwen_home / "settings.json"):
            os.chown(p, *_owner(state))
    # the positional prompt, unless the task starts with "-" (its parser would read a flag; `--`
    # ends with no prompt at all): then the deprecated `--prompt=`, which takes any text
    prompt = f"--prompt={task}" if task.startswith("-") else task
    argv = [str(prog.executable), prompt, "--approval-mode", "yolo", "--auth-type", "openai", "--model", model,
            *(["--max-session-turns", str(max_turns)] if max_turns else []),
            *(["--core-tools", ",".join(core_tools)] if core_tools else []),
            *(["--exclude-tools", ",".join(exclude_tools)] if exclude_tools else [])]
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key, "OPENAI_MODEL": model,
           "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1", "QWEN_CODE_DISABLE_PRECONNECT": "1", "QWEN_TELEMETRY_ENABLED": "false"}
    if system_prompt is not None:
        env["QWEN_SYSTEM_MD"] = _write(state, "system.md", system_prompt)
    return argv, env, {}


def _openhands(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
               agent: Mapping | None = None) -> tuple[list[str], dict, dict]:
    task_file = _write(state, "task.md", task)
    argv = [str(prog.executable), "--headless", "--file", task_file, "--always-approve", "--override-with-envs"]
    env = {"LLM_API_KEY": api_key, "LLM_BASE_URL": base_url, "LLM_MODEL": f"openai/{model}",
           "OPENHANDS_PERSISTENCE_DIR": f"{STATE}/openhands", "OPENHANDS_WORK_DIR": APP,
           "ALLOW_SHORT_CONTEXT_WINDOWS": "true"}  # else it refuses a model under 16k tokens (SmolLM2: 8k)
    if agent:  # its saved agent settings (the openhands-cli-8k spec): the CLI loads them, then sets
        # the model from the environment and its tools (filtered by `filter_tools_regex`) itself
        home = state / "openhands"
        home.mkdir(exist_ok=True)
        llm = {"model": f"openai/{model}", "api_key": api_key, "base_url": base_url, "usage_id": "agent"}
        saved = _merged({"llm": llm}, agent)
        _write(state, "openhands/agent_settings.json", json.dumps(saved, indent=1))
        if os.geteuid() == 0:  # the program writes its conversations there
            for p in (home, home / "agent_settings.json"):
                os.chown(p, *_owner(state))
    return argv, env, {"conversations": f"{STATE}/openhands/conversations"}


def _opencode(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
              context_window: int = 32768, max_output_tokens: int = 4096,
              config: Mapping | None = None) -> tuple[list[str], dict, dict]:
    # one provider, "harnessrl", through the openai-compatible client it bundles (Chat Completions);
    # `config` (a mapping) is merged over this one. Its project config (/app/opencode.json and
    # .opencode/) is switched off: the task's files do not configure the program
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "harnessrl",
                "options": {"baseURL": base_url, "apiKey": api_key},
                "models": {model: {"name": model, "tool_call": True,
                                   "limit": {"context": context_window, "output": max_output_tokens}}}}
    base = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
            "model": f"harnessrl/{model}", "small_model": f"harnessrl/{model}", "provider": {"harnessrl": provider},
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"}}
    conf = _write(state, "opencode.json", json.dumps(_merged(base, config or {}), indent=1))
    task_file = _write(state, "task.md", task)
    # the task on stdin, verbatim (as a prompt argument it would be quoted: an argument with a
    # space is wrapped in "..."); --title: a titled session makes no title-generation call
    argv = ["/bin/sh", "-c", f'exec "$0" "$@" < {task_file}', str(prog.executable), "run", "--title", "episode",
            "--auto", "--model", f"harnessrl/{model}"]
    env = {"OPENCODE_CONFIG": conf, "OPENCODE_DISABLE_PROJECT_CONFIG": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
           "OPENCODE_DISABLE_CLAUDE_CODE": "1", "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
           "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"}
    return argv, env, {"data": f"{STATE}/data/opencode"}


def _codex(prog: Installed, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           config: Mapping | None = None) -> tuple[list[str], dict, dict]:
    # one provider on the Responses wire (the only one it speaks), its key from the environment;
    # its own command sandbox off (the episode's sandbox is the boundary; inside bubblewrap its
    # seccomp/landlock one would only get in the way), approvals never asked. `config`: more
    # `-c key=value` overrides (values as TOML)
    overrides = {"model_provider": "harnessrl", "model_providers.harnessrl.name": "harnessrl",
                 "model_providers.harnessrl.base_url": base_url, "model_providers.harnessrl.env_key": "HARNESSRL_API_KEY",
                 "model_providers.harnessrl.wire_api": "responses", "check_for_update_on_startup": False,
                 **dict(config or {})}
    flags = [x for k, v in overrides.items() for x in ("-c", f"{k}={json.dumps(v)}")]
    task_file = _write(state, "task.md", task)
    home = state / "codex"
    home.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        os.chown(home, *_owner(state))
    # the task on stdin (`-`), verbatim
    argv = ["/bin/sh", "-c", f'exec "$0" "$@" < {task_file}', str(prog.executable), "exec", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "--cd", APP, "--model", model, *flags, "-"]
    return argv, {"CODEX_HOME": f"{STATE}/codex", "HARNESSRL_API_KEY": api_key}, {"sessions": f"{STATE}/codex/sessions"}


def _merged(base: Mapping, over: Mapping) -> dict:
    """`over` merged into `base`, mappings key by key (neither is changed)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _owner(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_uid, st.st_gid


_BUILDERS = {"mini-swe-agent": _mini, "aider-cli": _aider, "qwen-code-cli": _qwen, "openhands-cli": _openhands,
             "opencode-cli": _opencode, "codex-cli": _codex}

__all__ = ["LaunchSpec", "STATE", "WHOLE_ADDRESS_SPACE_MB", "launch_spec", "program_limits"]
