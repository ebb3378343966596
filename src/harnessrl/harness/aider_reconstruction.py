"""The Aider reconstruction (harness id `aider`, style `aider_reconstruction`, formerly style `aider`): our
re-implementation of Aider's edit formats and coder loop, not the program (the real Aider is the
`aider-cli` program: harnessrl.programs.aider). Edit blocks, then up to three reflections — and never a
shell command.

Control, as in Aider's coder loop (HARNESSES.md): the files are in the chat (a path line and
a fenced copy of each); the model replies once with SEARCH/REPLACE blocks (or, with option
`edit_format = "whole"`, complete file listings); the blocks that match are applied, and if
anything went wrong — a malformed reply, a block that matched nothing, lint errors in an
edited Python file, a failing `test_command` when one is configured — the failure text is
the next user message (a *reflection*). At most `max_reflections` (3) reflections; the
episode ends at the first reply that needs none. A reply without edit blocks ends it too.
Shell commands the model proposes are never run (Aider answers "no" under --yes).
With option `edit_format = "udiff"` the edits are unified diffs in ```diff blocks (Aider's
udiff format, _aider_udiff.py; the variant spec `aider_udiff`).
"""

from __future__ import annotations

import shlex
from typing import Any

from harnessrl.harness import _aider_edits as ed
from harnessrl.harness import _aider_udiff as ud
from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeHarness, CodeSession, resolve
from harnessrl.harness._reply import guarded
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, fill, register_style

#: flake8 codes Aider treats as fatal when it lints an edited Python file
FATAL_LINT = "E9,F821,F823,F831,F406,F407,F701,F702,F704,F706"


class AiderSession(CodeSession):
    harness: "AiderReconstruction"

    def start(self) -> list[dict[str, str]]:
        self.reflections = 0
        values = self.prompt_values()
        values["fence"] = self.harness.fence
        show = self.opt("show_files", "all")
        if show == "all":
            values["files"] = ws.files_block(self.env, int(self.opt("max_file_chars", 30_000)), fence=self.harness.fence)
        elif show == "names":
            values["files"] = "Files in the repository (their contents are not shown):\n" + "\n".join(ws.list_files(self.env))
        else:
            values["files"] = ""
        messages = self.open_conversation(values)
        # Aider shows worked example exchanges between the system prompt and the chat, then says
        # the example project is gone (spec option `examples`: [{role, content}], in our words)
        examples = [{"role": e["role"], "content": fill(e["content"], **values)} for e in self.opt("examples", [])]
        if examples:
            examples += [{"role": "user", "content": "That was an example from another project; its files are gone. "
                                                     "Do not edit them."},
                         {"role": "assistant", "content": "Ok."}]
            self.messages = messages[:1] + examples + messages[1:]
        return self.messages

    # -- one reply ---------------------------------------------------------------------------

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            self.reflections += 1
            result = self.record_format_error(text, calls)
            if self.reflections > int(self.opt("max_reflections", 3)) and not self.done:
                self.stop("reflections_exhausted", "format_error")
                result.done = True
            return result
        if not calls:
            self.stop("no_edits")
            return self.end_turn(text, "", tool_result="no edit blocks in the reply", done=True)
        failed, applied, edited = self._apply(calls)
        reflection, status = "", "ok"
        if failed and self.harness.udiff:
            reflection, status = ud.failure_report([hunk for hunk, _ in failed], applied), "tool_error"
        elif failed:
            reflection, status = ed.failure_report(failed, applied, self.harness.fence), "tool_error"
        elif self.opt("lint", True):
            reflection = self._lint([p for p in edited if p.endswith(".py")])
            status = "tool_error" if reflection else "ok"
        if not reflection and self.opt("test_command", ""):
            reflection = self._test()
            status = "tool_error" if reflection else "ok"
        summary = f"applied {applied} edit(s) to {', '.join(edited) or 'no file'}; {len(failed)} failed"
        if not reflection:
            self.stop("edits_applied")
            return self.end_turn(text, "", tool_calls=calls, tool_result=summary, status=status, done=True)
        self.reflections += 1
        if self.reflections > int(self.opt("max_reflections", 3)):
            self.stop("reflections_exhausted")
            return self.end_turn(text, "", tool_calls=calls, tool_result=summary + "\n" + reflection, status=status, done=True)
        return self.end_turn(text, reflection, tool_calls=calls, tool_result=summary, status=status)

    def _apply(self, calls: list[ToolCall]) -> tuple[list[tuple[Any, str | None]], int, list[str]]:
        """Apply the edits in order: (failed (edit, file text), number applied, files edited)."""
        failed: list[tuple[Any, str | None]] = []
        applied, edited = 0, []
        for call in calls:
            if call.name == "udiff":
                block: Any = ud.Hunk(call.args["path"], tuple(ed.split_lines(call.args["hunk"])))
            else:
                block = ed.EditBlock(call.args["path"], call.args.get("search", ""), call.args["replace"])
            rel = resolve(block.path)
            if not rel:
                failed.append((block, None))
                continue
            try:
                current = ws.read_text(self.env, rel) if ws.exists(self.env, rel) else None
                if call.name == "udiff":
                    new = ud.apply_hunk(current, block)
                else:
                    new = call.args["replace"] if call.name == "whole_file" else ed.apply_block(current, block)
                if new is None:
                    failed.append((block, current))
                    continue
                ws.write_text(self.env, rel, new)
            except ws.FileError:
                failed.append((block, None))
                continue
            applied += 1
            if rel not in edited:
                edited.append(rel)
        return failed, applied, edited

    def _lint(self, paths: list[str]) -> str:
        if not paths:
            return ""
        cmd = f"{ws.python(self.env)} -m flake8 --isolated --select={FATAL_LINT} --show-source " + " ".join(shlex.quote(p) for p in paths)
        out = self.shell.run(cmd, cwd="/app", keep_cwd=False)
        if out.exit_code == 0 or not out.stdout.strip():
            return ""
        return f"# Fix any errors below, if possible.\n\n## Running: flake8 --select={FATAL_LINT}\n\n{out.stdout.strip()}\n"

    def _test(self) -> str:
        out = self.shell.run(self.opt("test_command", ""), cwd="/app", keep_cwd=False)
        if out.exit_code == 0:
            return ""
        return f"# The tests failed; fix the code so they pass.\n\n{(out.stdout + out.stderr)[-8000:]}"


@register_style
class AiderReconstruction(CodeHarness):
    style = "aider_reconstruction"
    all_tools = ("edit",)
    tool_capabilities = {"edit": frozenset({"edit"})}
    session_class = AiderSession

    @property
    def whole(self) -> bool:
        return self.spec.options.get("edit_format", "diff") == "whole"

    @property
    def udiff(self) -> bool:
        return self.spec.options.get("edit_format", "diff") == "udiff"

    @property
    def fence(self) -> str:
        return self.spec.options.get("fence", "```")

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        try:
            if self.whole:
                return [ToolCall("whole_file", {"path": p, "replace": c}) for p, c in ed.find_whole_files(text)]
            if self.udiff:
                return [ToolCall("udiff", {"path": h.path, "hunk": "".join(h.lines)}) for h in ud.find_hunks(text)]
            return [ToolCall("search_replace", {"path": b.path, "search": b.search, "replace": b.replace})
                    for b in ed.find_edit_blocks(text)]
        except ed.EditFormatError as err:
            return FormatError(f"The reply does not follow the edit format. {err}")

    def format_error_message(self, err: FormatError) -> str:
        return err.message

    # -- scripted plans ----------------------------------------------------------------------

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        text, _ = self.render_turn([intent], session)
        return text

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        """All edits of the plan in one reply (Aider gets one reply plus reflections)."""
        blocks: list[str] = []
        files: dict[str, str | None] = {}  # path -> content as the edits so far leave it
        used = 0
        for intent in intents:
            if intent.kind in ("finish", "read", "answer"):
                used += 1
                continue
            if intent.kind not in ("write", "replace"):
                break  # a shell command: not expressible here
            path = intent.args["path"]
            if path not in files:
                rel = resolve(path)
                files[path] = ws.read_text(session.env, rel) if session is not None and rel and ws.exists(session.env, rel) else None
            before = files[path]
            if intent.kind == "write":
                after = intent.args["content"]
                search, after_block = before or "", after
            else:
                search, after_block = _line_aligned(before or "", intent.args["old"], intent.args["new"])
                after = (before or "").replace(search, after_block, 1)
            if self.udiff:
                blocks.append(ud.render_hunk(path, search, after_block, new_file=before is None))
            elif not self.whole:
                blocks.append(ed.render_block(path, search, after_block, self._fence_for(search, after_block)))
            files[path] = after
            used += 1
        if self.whole:
            blocks = [ed.render_whole(p, c or "", self._fence_for(c or "")) for p, c in files.items()]
        if used == 0:
            raise ValueError(f"aider cannot express a {intents[0].kind!r} intent (it never runs shell commands)")
        return "\n".join(blocks) if blocks else "No changes are needed.", used

    def _fence_for(self, *texts: str) -> str:
        return ed.choose_fence(*texts) if any("```" in t for t in texts) else self.fence

    def expressible(self, intent: Intent) -> bool:
        if intent.kind not in ("write", "replace", "finish", "read", "answer"):
            return False
        if self.whole:
            return True
        if self.udiff:  # hunk lines are whole lines, and a blank before text means "append"
            texts = [str(intent.args.get(k, "")) for k in ("content", "old", "new")]
            return all(not t or t.endswith("\n") for t in texts) and (intent.kind != "replace" or bool(intent.args["old"].strip()))
        if intent.kind == "replace" and not str(intent.args.get("old", "")).strip():
            return False  # an all-blank SEARCH means "create or append" to Aider
        texts = [str(intent.args.get(k, "")) for k in ("content", "old", "new")]
        markers = (ed.HEAD, ed.DIVIDER, ed.UPDATED)  # matched stripped, as Aider reads them
        return not any(m.match(line.strip()) for t in texts for line in t.split("\n") for m in markers)


def _line_aligned(content: str, old: str, new: str) -> tuple[str, str]:
    """Widen a replacement to whole lines, since SEARCH matches lines."""
    at = content.find(old)
    if at < 0 or not old:
        return old, new
    start = content.rfind("\n", 0, at) + 1
    end_nl = content.find("\n", at + len(old) - (1 if old.endswith("\n") else 0))
    end = len(content) if end_nl < 0 else end_nl + 1
    return content[start:end], content[start:at] + new + content[at + len(old):end]
