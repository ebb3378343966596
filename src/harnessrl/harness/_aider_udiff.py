"""Aider's `udiff` edit format as pure functions: find the hunks of ```` ```diff ```` blocks in a
reply, apply one hunk to a file's text, and write the failure text Aider reflects back.

Behaviour follows Aider 0.86 (`aider/coders/udiff_coder.py`), in our own code and words:
  * a diff is a fenced block opened by a line starting with ```` ```diff ```` and closed by the
    next line starting with ```` ``` ````; `--- a` / `+++ b` header lines name the file (`b/`
    dropped when the pair uses git's `a/` `b/` or `/dev/null`); without a header a hunk
    belongs to the previous file; a new header pair inside a block starts another file;
  * hunks are split at `@@` lines; line numbers in `@@ … @@` are ignored; a hunk with no
    `+`/`-` line is dropped; a line shorter than two characters is blank context;
  * applying: the before text (context and `-` lines) must occur exactly once in the file
    (or, failing that, once with a uniformly missing indentation, as for SEARCH/REPLACE); a
    hunk whose before text is blank creates the file or appends to it; when the whole hunk
    does not match, each run of changes is retried with less and less of its surrounding
    context (at most `MAX_CONTEXT` lines either side, so a huge hunk cannot stall a step);
    a hunk that still matches nowhere (or in several places: Aider's "not unique" error is
    never reached, its search swallows that case) is reported with its before lines.
Deliberate difference: Aider's further fuzzy strategies (re-diffing the hunk against the file,
relative-indentation search, ignoring blank lines) are not reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass

from harnessrl.harness import _aider_edits as ed

MAX_CONTEXT = 10  # context lines either side tried when a whole hunk does not match


@dataclass(frozen=True, slots=True)
class Hunk:
    path: str
    lines: tuple[str, ...]  # each with its op character (" ", "-", "+") first, newline kept

    def before_after(self) -> tuple[str, str]:
        return before_after(self.lines)


def before_after(lines: tuple[str, ...] | list[str]) -> tuple[str, str]:
    before, after = [], []
    for line in lines:
        op, body = (line[0], line[1:]) if len(line) >= 2 else (" ", line)
        if op in " -":
            before.append(body)
        if op in " +":
            after.append(body)
    return "".join(before), "".join(after)


def _header_path(minus: str, plus: str) -> str:
    a, b = minus[4:].strip(), plus[4:].strip()
    return b[2:] if (a.startswith("a/") or a == "/dev/null") and b.startswith("b/") else b


def find_hunks(text: str) -> list[Hunk]:
    """Every hunk of every ```` ```diff ```` block, in order. Raises EditFormatError when a hunk
    has no file (no `--- / +++` header before it anywhere in the reply)."""
    lines = ed.split_lines(text if text.endswith("\n") else text + "\n")
    hunks: list[Hunk] = []
    path: str | None = None
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```diff"):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        block, i = lines[i + 1:j], j + 1
        current: list[str] = []
        k = 0
        while k <= len(block):
            line = block[k] if k < len(block) else "@@ @@\n"  # the block's end closes the last hunk
            if line.startswith("--- ") and k + 1 < len(block) and block[k + 1].startswith("+++ "):
                path = _flush(hunks, path, current[:-1] if current and current[-1] == "\n" else current)
                path = _header_path(line, block[k + 1])
                current, k = [], k + 2
                continue
            if line.startswith("@@"):
                path = _flush(hunks, path, current)
                current = []
            else:
                current.append(line)
            k += 1
    return hunks


def _flush(hunks: list[Hunk], path: str | None, lines: list[str]) -> str | None:
    if any(len(x) >= 2 and x[0] in "+-" for x in lines):
        if not path:
            raise ed.EditFormatError("A diff hunk has no file: start each ```diff block with `--- path` and `+++ path` lines.")
        hunks.append(Hunk(path, tuple(lines)))
    return path


# ----------------------------------------------------------------------------------------
# Applying one hunk


def _direct(content: str, before: str, after: str) -> str | None:
    if not before.strip() or content.count(before) > 1:
        return None
    return ed.apply_block(content, ed.EditBlock("", before, after))


def apply_hunk(content: str | None, hunk: Hunk) -> str | None:
    """The new file text, or None when the hunk does not match (nowhere, or in several places)."""
    before, after = hunk.before_after()
    if not before.strip():
        base = content or ""
        return (base if not base or base.endswith("\n") else base + "\n") + after
    if content is None:
        return None
    new = _direct(content, before, after)
    if new is not None:
        return new
    return _by_sections(content, list(hunk.lines))


def _by_sections(content: str, lines: list[str]) -> str | None:
    """Apply each run of changes with as much of its context as still matches."""
    ops = [" " if len(x) < 2 or x[0] == " " else "x" for x in lines]
    sections: list[list[str]] = [[]]  # context, changes, context, changes, ..., context
    for line, op in zip(lines, ops):
        if (op == "x") != (len(sections) % 2 == 0):
            sections.append([])
        sections[-1].append(line)
    if len(sections) % 2 == 0:
        sections.append([])
    for s in range(1, len(sections), 2):
        prec, changes, foll = sections[s - 1][-MAX_CONTEXT:], sections[s], sections[s + 1][:MAX_CONTEXT]
        new = None
        for use in range(len(prec) + len(foll), -1, -1):
            for use_prec in range(min(len(prec), use), -1, -1):
                use_foll = use - use_prec
                if use_foll > len(foll):
                    continue
                part = (prec[len(prec) - use_prec:] if use_prec else []) + changes + foll[:use_foll]
                new = _direct(content, *before_after(part))
                if new is not None:
                    break
            if new is not None:
                break
        if new is None:
            return None
        content = new
    return content


# ----------------------------------------------------------------------------------------
# Failure text (the reflection)


def failure_report(failed: list[Hunk], applied: int) -> str:
    """The reflection for hunks that did not apply (Aider's UnifiedDiffNoMatch, in our words)."""
    out = []
    for hunk in failed:
        before, _ = hunk.before_after()
        n = len(before.splitlines())
        out.append(f"A diff hunk could not be applied: {hunk.path} has no run of lines matching it.\n"
                   "Try again, keeping every blank line, comment and docstring: the lines starting with a space "
                   f"or `-` must be exactly the current lines of {hunk.path}, in order, and in one place only.\n\n"
                   f"{hunk.path} does not contain these {n} lines in a row:\n```\n{before}```\n")
    if applied:
        out.append("The other hunks were applied; do not send them again.\n")
    return "\n".join(out)


def render_hunk(path: str, before: str, after: str, new_file: bool = False) -> str:
    """One ```diff block turning `before` into `after` (whole lines) in `path`."""
    def lines(text: str, op: str) -> str:
        return "".join(op + x for x in ed.split_lines(text if not text or text.endswith("\n") else text + "\n"))

    head = f"--- /dev/null\n+++ {path}\n" if new_file else f"--- {path}\n+++ {path}\n"
    return f"```diff\n{head}@@ @@\n{lines(before, '-')}{lines(after, '+')}```\n"
