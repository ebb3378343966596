"""Codex CLI 0.171.0 (npm `@openai/codex`), non-interactive (`codex exec -`), the Responses API.

It speaks only the Responses API (`wire_api = "chat"` is refused since its chat support was
removed): the gateway serves /v1/responses by translation (gateway/responses_wire.py), so the
session and the policy see the same chat form as for every other program. Node only launches
its native binary. It runs each exec_command itself (`bash -lc CMD` in /app) and ends at the
first reply with no function call, or with exit 1 at a reply cut at its length.

Codex has no file-writing tool at this version with an unknown model (no apply_patch tool is
offered), so the tool table writes every intent as a shell command: run -> exec_command (the
script base64-encoded and piped to bash); write -> the content base64-encoded into the file
(its folder made); replace -> the same with the file's whole new text (so the file must exist);
read -> cat; finish -> a reply with no function call. `yield_time_ms` asks the program to wait
up to a minute for the command before it answers (by default it answers after a few seconds
with a session id to poll, and a test run would still be going on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from harnessrl.programs.base import (STATE, WORKDIR, Call, InstalledLike, Launch, Program, Refuse, Say, ToolTable,
                                     builtin_lock, give_to_program, stdin_argv, write_input)

WAIT_MS = 60_000


def launch(prog: InstalledLike, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           config: Mapping | None = None) -> Launch:
    # one provider on the Responses wire, its key from the environment; its own command sandbox off
    # (the episode's sandbox is the boundary; inside bubblewrap its seccomp/landlock one would only
    # get in the way), approvals never asked, no update check. `config`: more `-c key=value` overrides (TOML values)
    overrides = {"model_provider": "harnessrl", "model_providers.harnessrl.name": "harnessrl",
                 "model_providers.harnessrl.base_url": base_url, "model_providers.harnessrl.env_key": "HARNESSRL_API_KEY",
                 "model_providers.harnessrl.wire_api": "responses", "check_for_update_on_startup": False,
                 **dict(config or {})}
    flags = [x for k, v in overrides.items() for x in ("-c", f"{k}={json.dumps(v)}")]
    task_file = write_input(state, "task.md", task)
    home = state / "codex"
    home.mkdir(exist_ok=True)
    give_to_program(state, home)
    argv = stdin_argv(task_file, str(prog.executable), "exec", "--skip-git-repo-check",
                      "--dangerously-bypass-approvals-and-sandbox", "--cd", WORKDIR, "--model", model, *flags, "-")
    return argv, {"CODEX_HOME": f"{STATE}/codex", "HARNESSRL_API_KEY": api_key}, {"sessions": f"{STATE}/codex/sessions"}


def _exec(cmd: str) -> Call:
    return Call("exec_command", {"cmd": cmd, "workdir": WORKDIR, "yield_time_ms": WAIT_MS})


WRITE = "{mkdir_parent}echo {b64_text} | base64 -d > {q_path}"

TOOLS = ToolTable(
    wire="tool_call", tools={"exec_command": frozenset({"shell", "edit"})},
    intents={
        "finish": Say("{message}"),
        "run": _exec("{script}"),
        "read": _exec("cat {q_path}"),
        "write": _exec(WRITE),
        "replace": _exec(WRITE),
        "replace:new": Refuse("codex_cli renders a replace as the file's new text: {given!r} must exist"),
    })

PROGRAM = Program(
    name="codex-cli", package="@openai/codex", version="0.171.0", kind="npm", entry="codex", protocol="tools",
    node="20", style="codex_cli", launch=launch, tools=TOOLS, lock=builtin_lock("codex-cli", "npm"),
    description="Codex CLI, non-interactive (`codex exec -`, the task on stdin, its own sandbox off), "
                "Responses API, function calls")
