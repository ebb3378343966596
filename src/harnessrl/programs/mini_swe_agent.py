"""mini-swe-agent 2.4.6 (pip `mini-swe-agent`), its text protocol (`mini_textbased.yaml`).

The SWE-agent team's *minimal* agent, not SWE-agent's agent-computer interface (the
`swe_agent` reconstruction in harness/ is that one): a bash-only loop where every reply holds
exactly one fenced block

    THOUGHT: why.

    ```mswea_bash_command
    the command
    ```

which the program runs in a fresh subshell (cwd /app) and answers with `<returncode>` and
`<output>`; a reply with no block or several is a format error the program sends back itself
(three in a row end its run). It submits when a command's output starts with
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`. The tool table writes files with base64 through one
block per reply, runs a script the same way, then submits.
"""

from __future__ import annotations

import json
from pathlib import Path

from harnessrl.config import ConfigError
from harnessrl.programs.base import STATE, WORKDIR, Call, InstalledLike, Launch, Program, ToolTable, builtin_lock, write_input

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def reply(thought: str, command: str) -> str:
    """One reply in the text protocol (the command must not hold a line starting with ```)."""
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


def launch(prog: InstalledLike, state: Path, *, task: str, base_url: str, api_key: str, model: str,
           step_limit: int = 0, command_timeout_s: int = 60) -> Launch:
    builtin = next(prog.env.glob("lib/python*/site-packages/minisweagent/config/mini_textbased.yaml"), None)
    if builtin is None:
        raise ConfigError(f"agent program 'mini-swe-agent': mini_textbased.yaml not found in {prog.env}")
    episode = {  # JSON is YAML: one more config, merged over the text protocol's
        "run": {"task": task},
        "agent": {"mode": "yolo", "confirm_exit": False, "step_limit": step_limit, "cost_limit": 0},
        "model": {"model_class": "litellm_textbased", "model_name": f"openai/{model}", "cost_tracking": "ignore_errors",
                  "model_kwargs": {"api_base": base_url, "api_key": api_key}},
        "environment": {"environment_class": "local", "cwd": WORKDIR, "timeout": command_timeout_s},
    }
    config = write_input(state, "episode.yaml", json.dumps(episode, indent=1))
    # -o on the command line: the CLI's default output path would override the config's. Inputs are
    # absolute paths: mini resolves a relative `-c` name in its cwd first (/app/mini_textbased.yaml would win)
    argv = [str(prog.executable), "-c", str(builtin), "-c", config, "-o", f"{STATE}/traj.json", "--exit-immediately",
            "-y"]
    env = {"MSWEA_CONFIGURED": "true", "MSWEA_GLOBAL_CONFIG_DIR": f"{STATE}/config",  # no first-run prompt
           "MSWEA_COST_TRACKING": "ignore_errors", "MSWEA_SILENT_STARTUP": "1"}  # an unpriced model: no cost tracking
    return argv, env, {"trajectory": f"{STATE}/traj.json"}


WRITE = 'mkdir -p "$(dirname {q_path})" && echo {b64_text} | base64 -d > {q_path}'

TOOLS = ToolTable(wire="mswea", tools={"bash": frozenset({"shell", "edit"})}, intents={
    "finish": Call("bash", {"command": SUBMIT}, thought="The work is done; submitting."),
    "run": Call("bash", {"command": "{script}"}, thought="Run the command."),
    "read": Call("bash", {"command": "cat {q_given}"}, thought="Look at the file."),
    "write": Call("bash", {"command": WRITE}, thought="Write the file."),
    "replace": Call("bash", {"command": WRITE}, thought="Write the file."),  # the file's whole new text
})

PROGRAM = Program(
    name="mini-swe-agent", package="mini-swe-agent", version="2.4.6", kind="pip", entry="mini", protocol="text",
    python="3.11", style="mini_swe_agent", launch=launch, tools=TOOLS, lock=builtin_lock("mini-swe-agent", "pip"),
    description="mini-SWE-agent (the SWE-agent team's minimal bash-only agent, not SWE-agent's ACI), "
                "text protocol: one ```mswea_bash_command block per reply")
