"""A real agent program from outside harnessrl: `tiny-agent`, registered through the entry-point
group `harnessrl.programs` (tests/agents/test_external_program.py writes the dist-info that names
`tiny_agent_pkg:PROGRAM`). One module, as a built-in program: its pin, its launch, its tool table,
its harness spec (tiny-agent.toml)."""

from __future__ import annotations

from pathlib import Path

from harnessrl.programs.base import STATE, Call, Program, Say, ToolTable, write_input

HERE = Path(__file__).parent


def launch(prog, state: Path, *, task: str, base_url: str, api_key: str, model: str) -> tuple[list, dict, dict]:
    script = write_input(state, "agent.py", Path(prog.executable).read_text())  # the sandbox's python3 runs it
    task_file = write_input(state, "task.md", task)
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key, "OPENAI_MODEL": model, "TASK_FILE": task_file}
    return ["python3", script], env, {"account": f"{STATE}/done.json"}


TOOLS = ToolTable(wire="tool_call", tools={"write_file": frozenset({"edit"}), "replace_text": frozenset({"edit"})},
                  intents={"finish": Say("{message}"),
                           "write": Call("write_file", {"path": "{path}", "content": "{content}"}),
                           "replace": Call("replace_text", {"path": "{path}", "old": "{old}", "new": "{new}"})})

PROGRAM = Program(
    name="tiny-agent", package="tiny-agent", version="0.1", kind="local", entry=str(HERE / "agent.py"),
    protocol="tools", style="tiny_agent", launch=launch, tools=TOOLS, specs=(HERE / "tiny-agent.toml",),
    description="a one-call agent: asks the model once, applies its tool calls to /app, exits")
