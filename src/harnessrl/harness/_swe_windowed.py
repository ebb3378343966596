"""SWE-agent's classic ACI commands (open/goto/scroll/create/edit/find_file/search_*) over a
sandboxed workspace, as SWE-agent v1.1.0's bundles do them (tools/windowed,
tools/windowed/lib/windowed_file.py, tools/search, tools/windowed_edit_linting). The window
state (open file, first line) lives in `WindowState`.

Line model (windowed_file.py): a file is `text.split("\\n")`; `n_lines` counts
`splitlines()`; the first line of the window is clamped to [0, n_lines - 1 - window];
`edit s:e` replaces lines s..e (1-based, inclusive) by the replacement text split on
newlines (an empty replacement deletes them). Windows are `window` lines, scrolling moves
`window - overlap`; `open`/`goto`/`edit` put the target line a sixth of a window below the
top. `create` makes parent directories and an empty file. Python edits are linted with
flake8 *inside the sandbox*; an edit that introduces new errors is reverted and the model is
shown both versions. `search_file` never refuses for too many hits (upstream's limit counts
distinct file names, so it never triggers). Messages are our own words.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass, field

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import Shell, resolve, shown
from harnessrl.harness._reply import bounded_int

LINT_SELECT = "F821,F822,F831,E111,E112,E113,E999,E902"
MAX_LINE = 10**9  # line numbers past this are refused as they are written, before any int()


@dataclass
class WindowState:
    window: int = 100
    overlap: int = 2
    path: str | None = None  # workspace-relative
    first: int = 0  # 0-based first line of the window
    lint_cache: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)


def n_lines(text: str) -> int:
    return len(text.splitlines())


def clamp(first: float, total: int, window: int) -> int:
    return max(0, min(int(first), total - 1 - window))


def render_window(state: WindowState, text: str) -> str:
    total = n_lines(text)
    first = clamp(state.first, total, state.window)
    last = min(first + state.window - 1, total - 1)
    lines = text.split("\n")[first:last + 1]
    out = [f"[File: {shown(state.path or '')} ({total} lines total)]"]
    if first > 0:
        out.append(f"({first} more lines above)")
    out += [f"{first + i + 1}:{line}" for i, line in enumerate(lines)]
    if last < total - 1:
        out.append(f"({total - last - 1} more lines below)")
    return "\n".join(out)


def goto_top(state: WindowState, line0: int, total: int) -> None:
    state.first = clamp(line0 - state.window / 6, total, state.window)


class Tools:
    """The special commands. Each returns the observation text (errors are observations)."""

    def __init__(self, env, shell: Shell, state: WindowState, python: str):
        self.env, self.shell, self.state, self.python = env, shell, state, python

    def _text(self) -> str:
        return ws.read_text(self.env, self.state.path)

    def _need_open(self) -> str | None:
        return None if self.state.path else "No file open. Use the open command first."

    def open(self, path: str | None, line: str | None) -> str:
        if path is None:
            return self._need_open() or render_window(self.state, self._text())
        rel = resolve(path, self.shell.cwd)
        if rel is None or not ws.exists(self.env, rel):
            return f"Error: File {path} not found"
        if ws.is_dir(self.env, rel):
            return f"Error: {path} is a directory. You can only open files. Use cd or ls to navigate directories."
        text = ws.read_text(self.env, rel)
        total, notes = n_lines(text), []
        target = 1
        if line is not None:
            number = bounded_int(line, -MAX_LINE, MAX_LINE) if re.fullmatch(r"-?\d+", line) else None
            if number is None:
                return 'Usage: open "<file>" [<line_number>]\nError: <line_number> must be a number'
            target = number
            if target > total:
                notes += [f"Warning: <line_number> ({target}) is past the end of the file ({total} lines)",
                          f"Warning: using <line_number> {total} instead"]
                target = total
            elif target < 1:
                notes += [f"Warning: <line_number> ({target}) is less than 1", "Warning: using <line_number> 1 instead"]
                target = 1
        self.state.path = rel
        goto_top(self.state, target - 1, total)
        return "\n".join(notes + [render_window(self.state, text)])

    def goto(self, line: str | None) -> str:
        if err := self._need_open():
            return err
        if line is None:
            return "Usage: goto <line>"
        target = bounded_int(line, -MAX_LINE, MAX_LINE) if re.fullmatch(r"-?\d+", line) else None
        if target is None:
            return "Usage: goto <line>\nError: <line> must be a number"
        text = self._text()
        total = n_lines(text)
        if target > total:
            return f"Error: <line> must be at most {total}"
        goto_top(self.state, target - 1, total)
        return render_window(self.state, text)

    def scroll(self, direction: int) -> str:
        if err := self._need_open():
            return err
        text = self._text()
        step = self.state.window - self.state.overlap
        self.state.first = clamp(clamp(self.state.first, n_lines(text), self.state.window) + direction * step,
                                 n_lines(text), self.state.window)
        return render_window(self.state, text)

    def create(self, path: str | None) -> str:
        if not path:
            return "Usage: create <filename>"
        rel = resolve(path, self.shell.cwd)
        if not rel:
            return f"Error: cannot create {path}: outside the repository"
        if ws.exists(self.env, rel):
            return f"Warning: File '{path}' already exists."
        try:
            ws.write_text(self.env, rel, "")  # an empty file (`touch`); write_text makes the parent folders
        except ws.FileError as err:
            return f"Error: {err}"
        return self.open(path, None)

    # -- edit with lint-and-revert --------------------------------------------------------------

    def edit(self, line_range: str, replacement: str) -> tuple[str, bool]:
        """Returns (observation, ok)."""
        if err := self._need_open():
            return err, False
        m = re.fullmatch(r"\s*(\d{1,9}):(\d{1,9})\s*", line_range or "")
        if not m:
            return "Usage: edit <start_line>:<end_line>\n<replacement_text>\nend_of_edit", False
        start, end = int(m.group(1)) - 1, int(m.group(2)) - 1
        before = self._text()
        lines = before.split("\n")
        if start < 0 or end < start - 1 or start > len(lines):
            return f"Error: invalid range {line_range}: the file has {n_lines(before)} lines", False
        lines[start:end + 1] = replacement.split("\n") if replacement else []
        after = "\n".join(lines)
        path = self.state.path
        ws.write_text(self.env, path, after)
        new_errors = self._new_lint_errors(path, before, after, (start + 1, end + 1), len(replacement.splitlines()))
        if new_errors:
            applied = render_window(self.state, after)
            ws.write_text(self.env, path, before)
            original = render_window(self.state, before)
            errors = "\n".join(f"- {msg}" for _, _, msg in new_errors)
            return (
                "Your edit introduced new syntax or name error(s). Read the errors carefully and edit again.\n\n"
                f"ERRORS:\n{errors}\n\nThe file would have looked like this with your edit\n"
                f"{'-' * 48}\n{applied}\n{'-' * 48}\n\nThis is the code as it is now (before your edit)\n"
                f"{'-' * 48}\n{original}\n{'-' * 48}\n\n"
                "Your edit was NOT applied. Fix the edit command and try again; sending the same edit again "
                "will fail the same way."
            ), False
        goto_top(self.state, start, n_lines(after))
        return ("File updated. Check the change: indentation, duplicated or missing lines. Edit again if needed.\n"
                + render_window(self.state, after)), True

    def _lint(self, path: str, text: str) -> list[tuple[int, int, str]]:
        key = path + ":" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        if key not in self.state.lint_cache:
            out = self.shell.run(f"{self.python} -m flake8 --isolated --select={LINT_SELECT} {shlex.quote(path)}",
                                 cwd="/app", keep_cwd=False)
            errs = []
            for line in out.stdout.splitlines():
                m = re.match(r"^.*?:(\d+):(\d+): (.*)$", line.strip())
                if m:
                    errs.append((int(m.group(1)), int(m.group(2)), m.group(3)))
            self.state.lint_cache[key] = errs
        return self.state.lint_cache[key]

    def _new_lint_errors(self, path: str, before: str, after: str, window: tuple[int, int], n_new: int):
        if not path.endswith(".py"):
            return []
        previous = self._lint(path, before)
        current = self._lint(path, after)
        shift = n_new - (window[1] - window[0] + 1)
        moved = set()
        for line, col, msg in previous:  # where the old errors sit after the edit
            if line < window[0]:
                moved.add((line, col, msg))
            elif line > window[1]:
                moved.add((line + shift, col, msg))
        return [e for e in current if e not in moved and e[0] >= window[0]]

    # -- search ---------------------------------------------------------------------------

    def find_file(self, name: str | None, directory: str | None) -> str:
        if not name:
            return "Usage: find_file <file_name> [<dir>]"
        d = directory or "./"
        if directory is not None and not self._is_dir(directory):
            return f"Directory {directory} not found"
        out = self.shell.run(f"find {shlex.quote(d)} -type f -name {shlex.quote(name)} 2>/dev/null", keep_cwd=False)
        hits = [h for h in out.stdout.splitlines() if h.strip()]
        where = self._abs(d)
        if not hits:
            return f'No matches found for "{name}" in {where}'
        return f'Found {len(hits)} matches for "{name}" in {where}:\n' + "\n".join(self._abs(h) for h in hits)

    def search_dir(self, term: str | None, directory: str | None) -> str:
        if not term:
            return "Usage: search_dir <search_term> [<dir>]"
        d = directory or "./"
        if directory is not None and not self._is_dir(directory):
            return f"Directory {directory} not found"
        out = self.shell.run(
            f"find {shlex.quote(d)} -type f ! -path '*/.*' -exec grep -nIH -- {shlex.quote(term)} {{}} + 2>/dev/null"
            " | cut -d: -f1 | sort | uniq -c", keep_cwd=False)
        where = self._abs(d)
        counts = [line.strip().split(None, 1) for line in out.stdout.splitlines() if line.strip()]
        counts = [(int(c), p) for c, p in counts if c.isdigit()]
        if not counts:
            return f'No matches found for "{term}" in {where}'
        if len(counts) > 100:
            return f'More than {len(counts)} files matched for "{term}" in {where}. Please narrow your search.'
        total = sum(c for c, _ in counts)
        body = "\n".join(f"{self._abs(p)} ({c} matches)" for c, p in counts)
        return f'Found {total} matches for "{term}" in {where}:\n{body}\nEnd of matches for "{term}" in {where}'

    def search_file(self, term: str | None, path: str | None) -> str:
        if not term:
            return "Usage: search_file <search_term> [<file>]"
        if path is None:
            if err := self._need_open():
                return err
            path = shown(self.state.path)
        rel = resolve(path, self.shell.cwd)
        if rel is None or not ws.exists(self.env, rel) or ws.is_dir(self.env, rel):
            return f"Usage: search_file <search_term> [<file>]\nError: File name {path} not found. Please provide a valid file name."
        out = self.shell.run(f"grep -n -- {shlex.quote(term)} {shlex.quote(shown(rel))}", keep_cwd=False)
        hits = [line.split(":", 1) for line in out.stdout.splitlines() if ":" in line]
        where = shown(rel)
        if not hits:
            return f'No matches found for "{term}" in {where}'
        body = "\n".join(f"Line {n}:{t}" for n, t in hits)
        return f'Found {len(hits)} matches for "{term}" in {where}:\n{body}\nEnd of matches for "{term}" in {where}'

    def _is_dir(self, p: str) -> bool:
        rel = resolve(p, self.shell.cwd)
        return rel is not None and (rel == "" or ws.is_dir(self.env, rel))

    def _abs(self, p: str) -> str:
        rel = resolve(p, self.shell.cwd)
        return shown(rel) if rel is not None else p
