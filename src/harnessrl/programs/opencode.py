"""opencode 1.18.33 (npm `opencode-ai`), non-interactive (`opencode run`), an openai-compatible provider.

A self-contained executable (Bun, no Node needed to run it) per platform in an optional
dependency; the package's postinstall hard-links the one for this CPU (AVX2 or "baseline") over
its placeholder bin/opencode.exe, so two machines' installs may hash differently. The program
gets the task on stdin, sends its own system prompt and tools (bash, edit, glob, grep, read,
skill, task, todowrite, write), runs each tool call itself and ends at the first reply with no
tool call. A titled session makes no title-generation call, so every call is the main line.

Tool table: write -> write, replace -> edit, run -> bash (the script base64-encoded and piped
to bash), read -> read, finish -> a reply with no tool call. Unlike Qwen Code it edits and
overwrites a file it has not read (measured: docs/real-harnesses.md), so no read precedes an edit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from harnessrl.programs.base import (STATE, Call, InstalledLike, Launch, Program, Say, ToolTable, builtin_lock, merged,
                                     stdin_argv, write_input)


def launch(prog: InstalledLike, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           context_window: int = 32768, max_output_tokens: int = 4096, config: Mapping | None = None) -> Launch:
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
    conf = write_input(state, "opencode.json", json.dumps(merged(base, config or {}), indent=1))
    task_file = write_input(state, "task.md", task)
    # the task on stdin, verbatim; --title: a titled session makes no title-generation call
    argv = stdin_argv(task_file, str(prog.executable), "run", "--title", "episode", "--auto",
                      "--model", f"harnessrl/{model}")
    env = {"OPENCODE_CONFIG": conf, "OPENCODE_DISABLE_PROJECT_CONFIG": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
           "OPENCODE_DISABLE_CLAUDE_CODE": "1", "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
           "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"}
    return argv, env, {"data": f"{STATE}/data/opencode"}


TOOLS = ToolTable(
    wire="tool_call",
    tools={"bash": frozenset({"shell", "edit"}), "write": frozenset({"edit"}), "edit": frozenset({"edit"}),
           "read": frozenset()},
    intents={
        "finish": Say("{message}"),
        "write": Call("write", {"filePath": "{path}", "content": "{content}"}),
        "replace": Call("edit", {"filePath": "{path}", "oldString": "{old}", "newString": "{new}"}),
        "run": Call("bash", {"command": "{script}", "description": "Run the script"}),
        "read": Call("read", {"filePath": "{path}"}),
    })

PROGRAM = Program(
    name="opencode-cli", package="opencode-ai", version="1.18.33", kind="npm", entry="opencode", protocol="tools",
    node="20", style="opencode_cli", launch=launch, tools=TOOLS, lock=builtin_lock("opencode-cli", "npm"),
    description="opencode, non-interactive (`opencode run`, the task on stdin), an openai-compatible "
                "provider, OpenAI tool calls")
