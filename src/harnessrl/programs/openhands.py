"""OpenHands CLI 1.16.0 (pip `openhands`, on openhands-sdk 1.21.0), headless CodeAct agent, OpenAI tool calls.

The program gets the task as a file (`openhands --headless --file F --always-approve
--override-with-envs`, the model from LLM_MODEL / LLM_BASE_URL / LLM_API_KEY), sends its own
system prompt and tools (terminal, file_editor, task_tracker, task, finish, think), runs each
tool call itself (a persistent bash session in /app; an editor that refuses to `create` over
an existing file) and ends on a `finish` call or a reply without one. Its security analyzer
asks the model to rate each action (`security_risk`); with `--always-approve` nothing waits.

Tool table, one call per reply (its CodeAct prompt asks for one action at a time); reads are
rated LOW, changes MEDIUM, as its prompt describes the levels: write -> file_editor create (a
new file), str_replace of the whole current text (an existing one: `create` refuses to
overwrite), insert at line 0 (an empty one); replace -> str_replace; run -> terminal (the
script base64-encoded and piped to bash); read -> view; finish -> finish{message}. A new file
in a folder that does not exist yet gets `mkdir -p` first (`create` makes no parents).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from harnessrl.programs.base import (STATE, WORKDIR, Call, InstalledLike, Launch, Program, ToolTable, builtin_lock,
                                     give_to_program, merged, write_input)


def launch(prog: InstalledLike, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           agent: Mapping | None = None) -> Launch:
    task_file = write_input(state, "task.md", task)
    argv = [str(prog.executable), "--headless", "--file", task_file, "--always-approve", "--override-with-envs"]
    env = {"LLM_API_KEY": api_key, "LLM_BASE_URL": base_url, "LLM_MODEL": f"openai/{model}",
           "OPENHANDS_PERSISTENCE_DIR": f"{STATE}/openhands", "OPENHANDS_WORK_DIR": WORKDIR,
           "ALLOW_SHORT_CONTEXT_WINDOWS": "true"}  # else it refuses a model under 16k tokens (SmolLM2: 8k)
    if agent:  # its saved agent settings (the openhands-cli-8k spec): the CLI loads them, then sets
        # the model from the environment and its tools (filtered by `filter_tools_regex`) itself
        home = state / "openhands"
        home.mkdir(exist_ok=True)
        llm = {"model": f"openai/{model}", "api_key": api_key, "base_url": base_url, "usage_id": "agent"}
        write_input(state, "openhands/agent_settings.json", json.dumps(merged({"llm": llm}, agent), indent=1))
        give_to_program(state, home, home / "agent_settings.json")  # it writes its conversations there
    return argv, env, {"conversations": f"{STATE}/openhands/conversations"}


def _editor(command: str, risk: str, summary: str, **args: object) -> Call:
    return Call("file_editor", {"command": command, "path": "{path}", **args, "security_risk": risk, "summary": summary})


TOOLS = ToolTable(
    wire="tool_call",
    tools={"terminal": frozenset({"shell", "edit"}), "file_editor": frozenset({"edit"}), "finish": frozenset()},
    intents={
        "finish": Call("finish", {"message": "{message}"}),
        "run": Call("terminal", {"command": "{script}", "security_risk": "MEDIUM", "summary": "run the script"}),
        "read": _editor("view", "LOW", "look at the file"),
        "replace": _editor("str_replace", "MEDIUM", "edit the file", old_str="{old}", new_str="{new}"),
        "write:new": _editor("create", "MEDIUM", "edit the file", file_text="{content}"),
        "write:empty": _editor("insert", "MEDIUM", "edit the file", insert_line=0, new_str="{content}"),
        "write:existing": _editor("str_replace", "MEDIUM", "edit the file", old_str="{current}", new_str="{content}"),
    },
    mkdir=Call("terminal", {"command": "mkdir -p {q_parent}", "security_risk": "LOW", "summary": "make the folder"}))

PROGRAM = Program(
    name="openhands-cli", package="openhands", version="1.16.0", kind="pip", entry="openhands", protocol="tools",
    python="3.12", style="openhands_cli", launch=launch, tools=TOOLS, lock=builtin_lock("openhands-cli", "pip"),
    description="OpenHands CLI, headless (--headless -t TASK), CodeAct agent, OpenAI tool calls")
