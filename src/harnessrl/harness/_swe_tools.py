"""SWE-agent 1.x tools over a sandboxed workspace: the `str_replace_editor` of the
`tools/edit_anthropic` bundle, the blocklist of `ToolFilterConfig`, and the patch the
`tools/review_on_submit_m` bundle shows on the first `submit`.

Behaviour follows SWE-agent v1.1.0 (tag, commit 0f3acaf), as run by `config/default.yaml`
(registry `USE_FILEMAP=true`; `USE_LINTER`, window expansion: off). Messages are our own
words with the same content. Details kept on purpose, each as the released tool does it:

- every edit expands tabs in the whole file (`str_replace`/`insert` read the file with
  `expandtabs()` and write it back); `create` writes `file_text` as given;
- `view` of a file numbers lines `%6d<TAB>line` after cutting the text at 16,000 characters;
  a `.py` file over 16,000 characters is shown as a *filemap* (function bodies of 5+ lines
  elided) — tree-sitter upstream, Python's `ast` here (a file `ast` cannot parse is shown
  cut instead: a stated difference);
- `str_replace` checks the count of `old_str` before comparing it with `new_str`; the
  "multiple occurrences" message lists the lines that contain `old_str` whole (none for a
  multi-line `old_str`, as upstream); an empty `old_str` (found once only in an empty file)
  writes the file and then crashes the tool, as upstream;
- the edit history is never stored in 1.1.0 (the tool appends to a copy of its registry
  entry), so `undo_edit` always answers that there is no history. Option
  `editor_undo = true` gives a working undo instead (not the released behaviour).
- arguments arrive as the parser passes them: values are rendered as text (JSON `null`
  becomes the text "None", as the Jinja template renders it) and `insert_line` /
  `view_range` must then convert to integers, else the tool's argument error.
"""

from __future__ import annotations

import ast
import difflib
import posixpath
import shlex
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import WORKDIR, Shell, resolve

MAX_RESPONSE_LEN = 16_000
SNIPPET_LINES = 4
CLIPPED = ("<response clipped><NOTE>Only part of this file is shown, to save context. Search the file with "
           "`grep -n` for the line numbers you need, then view just those lines.</NOTE>")
COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")

#: ToolFilterConfig defaults of SWE-agent 1.1.0 (sweagent/tools/tools.py)
BLOCKLIST = ("vim", "vi", "emacs", "nano", "nohup", "gdb", "less", "tail -f", "python -m venv", "make")
BLOCKLIST_STANDALONE = ("python", "python3", "ipython", "bash", "sh", "/bin/bash", "/bin/sh", "nohup", "vi", "vim",
                        "emacs", "nano", "su")
BLOCK_UNLESS = {"radare2": r"\b(?:radare2)\b.*\s+-c\s+.*", "r2": r"\b(?:radare2)\b.*\s+-c\s+.*"}


def blocked(action: str, blocklist=BLOCKLIST, standalone=BLOCKLIST_STANDALONE, mode: str = "v1.1.0") -> bool:
    """ToolHandler.should_block_action. In the v1.1.0 release the prefix test runs the other way
    round (a blocklist entry *starting with* the action blocks it: `make` and `ma` are blocked,
    `make test` and `vim a.py` are not); upstream main fixed it after the release (PR #1336:
    the action starting with an entry). `mode="main"` follows the fix."""
    import re

    action = action.strip()
    if not action:
        return False
    if mode == "main":
        if any(action.startswith(b) for b in blocklist):
            return True
    elif any(b.startswith(action) for b in blocklist):
        return True
    if action in standalone:
        return True
    name = action.split()[0]
    return name in BLOCK_UNLESS and not re.search(BLOCK_UNLESS[name], action)


class EditorError(Exception):
    """The tool printed this and exited non-zero: the message is the observation."""


def as_text(value: Any) -> str:
    """A call argument as the command line receives it (Jinja renders non-strings with str())."""
    return value if isinstance(value, str) else str(value)


def as_int(name: str, value: Any) -> int:
    """argparse's `type=int` on the rendered argument."""
    text = as_text(value).strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 12:
        raise EditorError(f"str_replace_editor: error: argument --{name}: invalid int value: {as_text(value)!r}")
    return int(text)


def as_range(value: Any) -> list[int]:
    """`--view_range` takes exactly two integers (nargs=2, type=int)."""
    items = value if isinstance(value, list) else as_text(value).split()
    if len(items) != 2:
        raise EditorError("str_replace_editor: error: argument --view_range: expected 2 arguments")
    return [as_int("view_range", v) for v in items]


def cat_n(text: str, descriptor: str, first: int = 1) -> str:
    """The editor's numbered listing: cut at 16,000 characters first, then tabs expanded."""
    text = text if len(text) <= MAX_RESPONSE_LEN else text[:MAX_RESPONSE_LEN] + CLIPPED
    body = "\n".join(f"{i + first:6}\t{line}" for i, line in enumerate(text.expandtabs().split("\n")))
    return f"Result of `cat -n` on {descriptor}:\n{body}\n"


def filemap(text: str) -> str | None:
    """A Python file with the bodies of functions of 5+ lines elided; None if it does not parse.
    Rows are 0-based like tree-sitter's; each elided body leaves one `... eliding lines a-b ...`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            start = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])]) - 1
            end = (node.body[-1].end_lineno or node.body[-1].lineno) - 1
            if end - start >= 5:
                spans.append((start, end))
    hidden = {row for start, end in spans for row in range(start, end + 1)}
    rows = [(s, f"... eliding lines {s + 1}-{e + 1} ...") for s, e in spans]
    rows += [(i, line) for i, line in enumerate(text.splitlines()) if i not in hidden]
    return "\n".join(f"{i + 1:6d} {line}" for i, line in sorted(rows))


class Editor:
    """`str_replace_editor` as SWE-agent 1.1.0 runs it. Paths are absolute paths under /app."""

    def __init__(self, env: Any, shell: Shell, *, use_filemap: bool = True, undo: bool = False):
        self.env, self.shell, self.use_filemap, self.undo = env, shell, use_filemap, undo
        self.history: dict[str, list[str]] = {}

    def __call__(self, args: dict[str, Any]) -> str:
        """What the tool prints (without print's final newline); raises EditorError on failure.
        Typed arguments convert first, as argparse does before the tool runs."""
        command, path = as_text(args["command"]), as_text(args["path"])
        view_range = as_range(args["view_range"]) if "view_range" in args else None
        insert_line = as_int("insert_line", args["insert_line"]) if "insert_line" in args else None
        rel = self._validate(command, path)
        if command == "view":
            return self._view(rel, path, view_range)
        if command == "create":
            if "file_text" not in args:
                raise EditorError("The `file_text` parameter is required for the create command.")
            return self._create(rel, path, as_text(args["file_text"]))
        if command == "str_replace":
            if "old_str" not in args:
                raise EditorError("The `old_str` parameter is required for the str_replace command.")
            return self._str_replace(rel, path, as_text(args["old_str"]),
                                     as_text(args["new_str"]) if "new_str" in args else None)
        if command == "insert":
            if insert_line is None:
                raise EditorError("The `insert_line` parameter is required for the insert command.")
            if "new_str" not in args:
                raise EditorError("The `new_str` parameter is required for the insert command.")
            return self._insert(rel, path, insert_line, as_text(args["new_str"]))
        if command == "undo_edit":
            if not self.undo or not self.history.get(rel):
                raise EditorError(f"{path} has no edit history to undo.")
            old = self.history[rel].pop()
            self._write(rel, old)
            return f"The last edit to {path} was undone. " + cat_n(old, path)
        raise EditorError(f'Unknown command {command}. The str_replace_editor tool knows only these commands: '
                          f'"view", "create", "str_replace", "insert", "undo_edit"')

    # -- checks, in the order the tool makes them --------------------------------------------

    def _validate(self, command: str, path: str) -> str:
        if not path.startswith("/"):
            raise EditorError(f"{path} is not an absolute path; paths must start with `/`. "
                              f"Did you mean {posixpath.join(self.shell.cwd, path)}?")
        rel = resolve(path)
        if rel is None:  # the sandbox: the agent's files live under /app only
            raise EditorError(f"The path {path} is outside {WORKDIR}; only paths under {WORKDIR} can be used.")
        exists = rel == "" or ws.exists(self.env, rel)
        if not exists and command != "create":
            raise EditorError(f"There is no file or directory at {path}. Give a path that exists.")
        if exists and command == "create":
            raise EditorError(f"A file already exists at {path}; `create` never overwrites a file.")
        if (rel == "" or ws.is_dir(self.env, rel)) and command != "view":
            raise EditorError(f"{path} is a directory; on directories only `view` can be used")
        return rel

    def _write(self, rel: str, text: str) -> None:
        try:
            ws.write_text(self.env, rel, text)
        except ws.FileError as err:
            raise EditorError(f"Writing {shown_path(rel)} failed: {err}") from None

    def _remember(self, rel: str, text: str) -> None:
        if self.undo:
            self.history.setdefault(rel, []).append(text)

    # -- commands ---------------------------------------------------------------------------

    def _create(self, rel: str, path: str, text: str) -> str:
        parent = posixpath.dirname(rel)
        if parent and not ws.is_dir(self.env, parent):
            raise EditorError(f"The directory {posixpath.dirname(path)} does not exist; create it first.")
        self._write(rel, text)
        self._remember(rel, text)
        return f"Created the file {path}."

    def _view(self, rel: str, path: str, view_range: list[int] | None) -> str:
        if rel == "" or ws.is_dir(self.env, rel):
            if view_range is not None:
                raise EditorError("`view_range` cannot be used when `path` is a directory.")
            out = self.shell.run(f"find {shlex.quote(path)} -maxdepth 2 -not -path '*/.*' | sort", keep_cwd=False)
            return f"Files and directories in {path}, two levels deep, hidden ones left out:\n{out.stdout}\n"
        text = ws.read_text(self.env, rel)
        if view_range is None:
            if rel.endswith(".py") and len(text) > MAX_RESPONSE_LEN and self.use_filemap:
                fmap = filemap(text)
                if fmap is not None:
                    fmap = fmap.expandtabs()
                    fmap = fmap if len(fmap) <= MAX_RESPONSE_LEN else fmap[:MAX_RESPONSE_LEN] + CLIPPED
                    return ("<NOTE>The file is too large to show whole; this is an abbreviated version. View chosen "
                            "lines next with `str_replace_editor view` and `view_range`.</NOTE>\n" + fmap + "\n"
                            "<IMPORTANT><NOTE>The file above is abbreviated. Use `view_range` to read the parts you "
                            "need in full.</NOTE></IMPORTANT>")
            return cat_n(text, path)
        lines = text.split("\n")
        n = len(lines)
        first, last = view_range
        if first < 1 or first > n:
            raise EditorError(f"Invalid `view_range` {view_range}: its first element `{first}` must lie within "
                              f"the file's lines {[1, n]}")
        if last > n:
            raise EditorError(f"Invalid `view_range` {view_range}: its second element `{last}` must not exceed "
                              f"the file's line count `{n}`")
        if last != -1 and last < first:
            raise EditorError(f"Invalid `view_range` {view_range}: its second element `{last}` must be at least "
                              f"its first `{first}`")
        last = n if last == -1 else last
        return cat_n("\n".join(lines[first - 1:last]), path, first)

    def _str_replace(self, rel: str, path: str, old: str, new: str | None) -> str:
        text = ws.read_text(self.env, rel).expandtabs()
        old = old.expandtabs()
        new = new.expandtabs() if new is not None else ""
        count = text.count(old)
        if count == 0:
            raise EditorError(f"Nothing was replaced: old_str `{old}` does not occur verbatim in {path}.")
        if count > 1:
            lines = [i + 1 for i, line in enumerate(text.split("\n")) if old in line]
            raise EditorError(f"Nothing was replaced: old_str `{old}` occurs more than once, in lines {lines}. "
                              "Make it unique")
        if new == old:
            raise EditorError(f"Nothing was replaced: old_str `{old}` and new_str `{new}` are the same.")
        after = text.replace(old, new)
        self._write(rel, after)
        self._remember(rel, text)
        if not old:  # the tool crashes here (`str.split("")`), after the file was written
            raise EditorError("str_replace_editor crashed after writing the file: ValueError: empty separator")
        line0 = text.split(old)[0].count("\n")
        start = max(1, line0 - SNIPPET_LINES)
        end = min(line0 + SNIPPET_LINES + new.count("\n"), len(after.splitlines()))
        snippet = "\n".join(after.split("\n")[start - 1:end])
        return (f"Edited {path}. " + cat_n(snippet, f"a snippet of {path}", start)
                + "Check that the change is what you intended, and edit again if it is not.")

    def _insert(self, rel: str, path: str, line: int, new: str) -> str:
        text = ws.read_text(self.env, rel).expandtabs()
        new = new.expandtabs()
        lines = text.split("\n")
        if line < 0 or line > len(lines):
            raise EditorError(f"Invalid `insert_line` {line}: it must lie within the file's lines {[0, len(lines)]}")
        new_lines = new.split("\n")
        snippet = lines[max(0, line - SNIPPET_LINES):line] + new_lines + lines[line:line + SNIPPET_LINES]
        self._write(rel, "\n".join(lines[:line] + new_lines + lines[line:]))
        self._remember(rel, text)
        return (f"Edited {path}. " + cat_n("\n".join(snippet), "a snippet of the edited file", max(1, line - SNIPPET_LINES + 1))
                + "Check that the change is what you intended (indentation right, no lines repeated), and edit "
                  "again if it is not.")


def shown_path(rel: str) -> str:
    return f"{WORKDIR}/{rel}" if rel else WORKDIR


# ---------------------------------------------------------------------------------------
# The patch shown for review (upstream: `git add -A && git diff --cached` in the repository)

def patch(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """A git-style unified diff of the workspace since the episode began (difflib hunks)."""
    out = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        out.append(f"diff --git a/{path} b/{path}\n")
        if a is None:
            out.append("new file mode 100644\n")
        elif b is None:
            out.append("deleted file mode 100644\n")
        try:
            old = (a or b"").decode("utf-8").splitlines(keepends=True)
            new = (b or b"").decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            out.append(f"Binary files {'a/' + path if a is not None else '/dev/null'} and "
                       f"{'b/' + path if b is not None else '/dev/null'} differ\n")
            continue
        for line in difflib.unified_diff(old, new, f"a/{path}" if a is not None else "/dev/null",
                                         f"b/{path}" if b is not None else "/dev/null", n=3):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def restore(work: Any, before: dict[str, bytes]) -> None:
    """Put the workspace back as `before` (a run that ends with `exit` submits no patch, so the
    repository is judged as it began). Files the agent made unreadable or unwritable stay."""
    for rel in set(work.files()) - set(before):
        try:
            work.delete(rel)
        except (ws.FileError, OSError):
            pass
    for rel, data in before.items():
        try:
            work.write_bytes(rel, data)
        except (ws.FileError, OSError):
            pass
