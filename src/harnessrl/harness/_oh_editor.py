"""OpenHands' `str_replace_editor` (view / create / str_replace / insert / undo_edit) over a
sandboxed workspace, with the editor's own messages. Paths are absolute paths under /app.
Deviation, stated: tabs are kept as they are (no `expandtabs`), so Makefiles survive edits.
"""

from __future__ import annotations

import shlex
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import WORKDIR, Shell, numbered, resolve, shown

SNIPPET_LINES = 4


class EditorError(Exception):
    """A tool error: the message is the observation."""


class Editor:
    def __init__(self, env: Any, shell: Shell):
        self.env, self.shell = env, shell
        self.history: dict[str, list[str]] = {}

    def __call__(self, args: dict[str, Any]) -> str:
        command, path = args["command"], args["path"]
        if not path.startswith("/"):
            raise EditorError(f"Invalid `path` parameter: {path}. The path should be an absolute path, starting with `/`.")
        rel = resolve(path)
        if rel is None:
            raise EditorError(f"Invalid `path` parameter: {path}. Only paths under {WORKDIR} can be used.")
        exists = rel == "" or ws.exists(self.env, rel)
        is_dir = rel == "" or (exists and ws.is_dir(self.env, rel))
        if command == "create":
            if exists:
                raise EditorError(f"Invalid `path` parameter: {path}. File already exists at: {path}. "
                                  "Cannot overwrite files using command `create`.")
            if args.get("file_text") is None:
                raise EditorError("Parameter `file_text` is required for command: create.")
            self._write(rel, args["file_text"], remember=False)
            self.history.setdefault(rel, [])
            return f"File created successfully at: {path}"
        if not exists:
            raise EditorError(f"Invalid `path` parameter: {path}. The path {path} does not exist. Please provide a valid path.")
        if is_dir and command != "view":
            raise EditorError(f"Invalid `path` parameter: {path}. The path {path} is a directory and only the `view` command can be used on directories.")
        if command == "view":
            return self._view_dir(path) if is_dir else self._view_file(rel, path, args.get("view_range"))
        if command == "str_replace":
            return self._str_replace(rel, path, args.get("old_str"), args.get("new_str") or "")
        if command == "insert":
            return self._insert(rel, path, args.get("insert_line"), args.get("new_str"))
        if command == "undo_edit":
            if not self.history.get(rel):
                raise EditorError(f"No edit history found for {path}.")
            self._write(rel, self.history[rel].pop(), remember=False)
            return f"Last edit to {path} undone successfully. " + self._cat(ws.read_text(self.env, rel), path)
        raise EditorError(f"Unrecognized command {command}.")

    def _write(self, rel: str, text: str, remember: bool = True) -> None:
        if remember:
            self.history.setdefault(rel, []).append(ws.read_text(self.env, rel))
        try:
            ws.write_text(self.env, rel, text)
        except ws.FileError as err:
            raise EditorError(f"Failed to write {shown(rel)}: {err}") from None

    def _cat(self, text: str, path: str, start: int = 1) -> str:
        return f"Here's the result of running `cat -n` on {path}:\n{numbered(text, start)}\n"

    def _view_file(self, rel: str, path: str, view_range: list[int] | None) -> str:
        text = ws.read_text(self.env, rel)
        if view_range is None:
            return self._cat(text, path)
        lines = text.split("\n")
        if len(view_range) != 2:
            raise EditorError("Invalid `view_range`. It should be a list of two integers.")
        first, last = view_range
        if first < 1 or first > len(lines):
            raise EditorError(f"Invalid `view_range`: {view_range}. Its first element `{first}` should be within the range of lines of the file: [1, {len(lines)}]")
        if last != -1 and (last < first or last > len(lines)):
            raise EditorError(f"Invalid `view_range`: {view_range}. Its second element `{last}` should be -1 or between {first} and {len(lines)}")
        chosen = lines[first - 1:] if last == -1 else lines[first - 1:last]
        return self._cat("\n".join(chosen), path, first)

    def _view_dir(self, path: str) -> str:
        out = self.shell.run(f"find {shlex.quote(path)} -maxdepth 2 -not -path '*/.*' | sort", keep_cwd=False)
        return (f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n"
                f"{out.stdout.rstrip()}\n")

    def _snippet(self, text: str, path: str, line0: int, n_new: int) -> str:
        lines = text.split("\n")
        start = max(0, line0 - SNIPPET_LINES)
        end = min(len(lines), line0 + n_new + SNIPPET_LINES)
        return (f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n"
                f"{numbered(chr(10).join(lines[start:end]), start + 1)}\n"
                "Review the changes and make sure they are as expected. Edit the file again if necessary.")

    def _str_replace(self, rel: str, path: str, old: str | None, new: str) -> str:
        if old is None:
            raise EditorError("Parameter `old_str` is required for command: str_replace.")
        if old == new:
            raise EditorError("No replacement was performed. `new_str` and `old_str` must be different.")
        text = ws.read_text(self.env, rel)
        count = text.count(old) if old else 0
        if count == 0:
            raise EditorError(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
        if count > 1:
            raise EditorError(f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines "
                              f"{occurrence_lines(text, old)}. Please ensure it is unique.")
        line0 = text.count("\n", 0, text.find(old))
        new_text = text.replace(old, new, 1)
        self._write(rel, new_text)
        return self._snippet(new_text, path, line0, new.count("\n") + 1)

    def _insert(self, rel: str, path: str, line: int | None, new: str | None) -> str:
        if line is None:
            raise EditorError("Parameter `insert_line` is required for command: insert.")
        if new is None:
            raise EditorError("Parameter `new_str` is required for command: insert.")
        text = ws.read_text(self.env, rel)
        lines = text.split("\n") if text else []
        if line < 0 or line > len(lines):
            raise EditorError(f"Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {len(lines)}]")
        new_lines = new.split("\n")
        new_text = "\n".join(lines[:line] + new_lines + lines[line:])
        self._write(rel, new_text)
        return self._snippet(new_text, path, line, len(new_lines))


def occurrence_lines(text: str, old: str) -> list[int]:
    """The lines (1-based, sorted, each once) where the non-overlapping occurrences of `old` start,
    as OpenHands' editor lists them. One pass: each search and each newline count starts where the
    previous one ended, so the listing is linear in the file (counting newlines from the start for
    every occurrence is quadratic: `a` in a 400 kB file of `a` lines took seconds in one step), and
    the list is at most one number per line of the file."""
    lines: list[int] = []
    line, counted, at = 1, 0, text.find(old)
    while at >= 0:
        line += text.count("\n", counted, at)
        counted = at
        if not lines or lines[-1] != line:
            lines.append(line)
        at = text.find(old, at + len(old))
    return lines
