"""The warm start's teacher `oracle-edit`: the reference solution as a small model can learn to write it.

Through mini-swe-agent the plain oracle writes each changed file whole, base64-encoded in one
shell command (programs/mini_swe_agent.py: exact for any file, whatever its quoting). That is
right for replaying a solution and useless as a demonstration for a 135M model: a few hundred
tokens of base64 per task carry no pattern to learn (SFT on them moved the loss from 3.40 to
3.28 and the model solved nothing). `oracle-edit` keeps the oracle's plan — the task's own
reference edit, so every demonstration still solves its task and is kept only if it does — and
writes it the way a person at a shell would:

    1. read the file:        cat /app/parity.py
    2. the edit itself:      python3 - <<'EOF' ... p.write_text(p.read_text().replace(OLD, NEW, 1)) ... EOF
    3. submit:               echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT

OLD and NEW are Python literals (repr) of the task's replace step, so the command is exact for
any text, and OLD is a copy of lines the model has just seen in step 1's output. Any other
harness, or a plan step that is not a replace, gets the plain oracle's rendering.
"""

from __future__ import annotations

from harnessrl.harness._common import resolve, shown
from harnessrl.programs.mini_swe_agent import SUBMIT, reply
from harnessrl.policies.base import AgentState
from harnessrl.policies.scripted import Oracle, channel, solution_plan

TEACHERS = ("oracle", "oracle-edit")
#: Harness styles with mini-swe-agent's text protocol (one fenced bash block per reply).
SHELL_TEXT_STYLES = {"mini_swe_agent"}


def edit_command(path: str, old: str, new: str) -> str:
    """A shell command that replaces the first `old` in `path` by `new` (heredoc: no shell quoting)."""
    return (f"python3 - <<'EOF'\nimport pathlib\np = pathlib.Path({path!r})\n"
            f"p.write_text(p.read_text().replace({old!r}, {new!r}, 1))\nEOF")


def edit_turns(intents: list) -> list[str] | None:
    """The replies for a plan of replace steps (each file read once, before its first edit), then submit;
    None when the plan has any other step (the plain oracle renders it)."""
    if not intents or any(i.kind != "replace" for i in intents):
        return None
    turns, read = [], set()
    for i in intents:
        path = shown(resolve(i.args["path"]) or "")
        if path not in read:
            read.add(path)
            turns.append(reply("Read the file to find the code to change.", f"cat {path}"))
        turns.append(reply("Change the code as the task asks.", edit_command(path, i.args["old"], i.args["new"])))
    return [*turns, reply("The change is made; submitting.", SUBMIT)]


class EditOracle(Oracle):
    """The oracle whose replace steps read as a shell user's edit through mini-swe-agent's protocol."""

    policy_id = "oracle-edit"

    def turn_text(self, state: AgentState) -> str:
        ch = channel(state)
        if getattr(ch.harness, "style", None) not in SHELL_TEXT_STYLES:
            return super().turn_text(state)
        if "edit_turns" not in state.cache:
            shell = ch.harness.capabilities is None or "shell" in ch.harness.capabilities
            state.cache["edit_turns"], state.cache["edit_pos"] = edit_turns(solution_plan(ch.task, shell, self.scratch)), 0
        turns = state.cache["edit_turns"]
        if turns is None:
            return super().turn_text(state)
        pos = state.cache["edit_pos"]
        state.cache["edit_pos"] = pos + 1
        return turns[min(pos, len(turns) - 1)]  # past the plan: submit again


def make_teacher(name: str) -> Oracle:
    return EditOracle() if name == "oracle-edit" else Oracle()
