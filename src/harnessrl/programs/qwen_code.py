"""Qwen Code 0.24.4 (npm `@qwen-code/qwen-code`), non-interactive, OpenAI tool calls.

The program gets the task as its prompt argument (`qwen "<task>" --approval-mode yolo`), sends
its own system prompt and tool schemas, runs every tool call of a reply itself (shell commands
with `bash -c` in /app, file tools on absolute paths under /app) and ends at the first reply
with no tool call; then, unless `managed_memory` is off, it makes one auxiliary "memory
extraction" call before it exits.

Tool table: write -> write_file, replace -> edit, run -> run_shell_command (the script base64
-encoded and piped to bash, so no quoting or `$(...)` of the script meets the program's command
checks), read -> read_file, finish -> a reply with no tool call. The program refuses to edit or
overwrite a file it has not read in this session (or that changed since it was read: its read
cache compares mtime and size), so an edit of such a file is preceded by a read_file call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from harnessrl.programs.base import (Call, InstalledLike, Launch, Program, Say, ToolTable, builtin_lock,
                                     give_to_program, merged, write_input)


def launch(prog: InstalledLike, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           max_turns: int | None = None, managed_memory: bool = True, core_tools: Sequence[str] = (),
           exclude_tools: Sequence[str] = (), system_prompt: str | None = None,
           settings: Mapping | None = None) -> Launch:
    # ~/.qwen/settings.json: what its flags do not cover (usage statistics, telemetry and auto-update
    # off). `settings` (the qwen-code-cli-8k spec: its context window, no startup context, no skills)
    # is merged over it; `system_prompt` replaces the program's through QWEN_SYSTEM_MD, its documented override
    base = {
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "openai"}}, "model": {"name": model},
        "memory": {"enableManagedAutoMemory": managed_memory},
    }
    qwen_home = state / "home" / ".qwen"
    qwen_home.mkdir(exist_ok=True)
    write_input(state, "home/.qwen/settings.json", json.dumps(merged(base, settings or {}), indent=1))
    give_to_program(state, qwen_home, qwen_home / "settings.json")  # it rewrites its own config (migrations)
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
        env["QWEN_SYSTEM_MD"] = write_input(state, "system.md", system_prompt)
    return argv, env, {}


TOOLS = ToolTable(
    wire="tool_call", read_before_edit=True,
    tools={"run_shell_command": frozenset({"shell", "edit"}), "write_file": frozenset({"edit"}),
           "edit": frozenset({"edit"}), "read_file": frozenset()},
    intents={
        "finish": Say("{message}"),
        "write": Call("write_file", {"file_path": "{path}", "content": "{content}"}),
        "replace": Call("edit", {"file_path": "{path}", "old_string": "{old}", "new_string": "{new}"}),
        "run": Call("run_shell_command", {"command": "{script}", "description": "Run the script."}),
        "read": Call("read_file", {"file_path": "{path}"}),
    })

PROGRAM = Program(
    name="qwen-code-cli", package="@qwen-code/qwen-code", version="0.24.4", kind="npm", entry="qwen",
    protocol="tools", node="20", style="qwen_code_cli", launch=launch, tools=TOOLS,
    executables=("node_modules/@qwen-code/qwen-code/vendor/ripgrep/x64-linux/rg",),
    lock=builtin_lock("qwen-code-cli", "npm"),
    description="Qwen Code, non-interactive (prompt argument, --approval-mode yolo), OpenAI tool calls")
