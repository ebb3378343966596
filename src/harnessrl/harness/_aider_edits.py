"""Aider's edit formats as pure functions: find SEARCH/REPLACE blocks and whole-file listings
in a reply, apply a block to a file's text, and write the failure text Aider reflects back.

Behaviour follows Aider's editblock/wholefile coders (Aider 0.86, HARNESSES.md): marker lines,
stripped of surrounding whitespace, match `^<{5,9} SEARCH>?\\s*$`, `^={5,9}\\s*$`,
`^>{5,9} REPLACE\\s*$`; the file path comes from the three lines before the SEARCH marker
(a path line, or a fence opening such as ```` ```calc.py ````), else the previous block's path;
an empty SEARCH creates the file (or appends to an existing one); only the first match is
replaced; matching is exact, then tolerant of a uniformly missing indentation, then with
`...` elision. Parse problems raise `EditFormatError` (the harness turns it into a
format_error observation).

Every step is near-linear in the file and the reply (a reply is untrusted and a file can be
long): matching searches the line sequence with KMP instead of comparing a slice at every
position, `...` lines are split with a line scan (a regex `^\\s*` rescans blank runs), and the
closest-match hint scores every window by shared lines first and runs difflib on a few only.
"""

from __future__ import annotations

import difflib
import heapq
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

HEAD = re.compile(r"^<{5,9} SEARCH>?\s*$")
DIVIDER = re.compile(r"^={5,9}\s*$")
UPDATED = re.compile(r"^>{5,9} REPLACE\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})")
HINT_WINDOWS = 32  # at most this many windows of the file are compared with a failed SEARCH by difflib
HINT_MAX_LINES = 400  # longer SEARCH sections get no closest-match hint
INDENT_CANDIDATES = 256  # windows equal but for indentation that are checked for one uniform prefix


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept; only "\\n" ends a line (str.splitlines also splits on \\r, \\x1c, ...)."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    return out + [parts[-1]] if parts[-1] else out


class EditFormatError(ValueError):
    """The reply does not follow the edit format; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class EditBlock:
    path: str
    search: str  # lines with their newlines; "" = create/append
    replace: str


# ----------------------------------------------------------------------------------------
# Parsing


def _marker(line: str, *patterns: re.Pattern[str]) -> bool:
    """Aider (0.86) compares marker lines stripped: an indented `<<<<<<< SEARCH` still counts."""
    stripped = line.strip()
    return any(p.match(stripped) for p in patterns)


def _strip_filename(line: str) -> str | None:
    """A path from a line before a block, by Aider's (0.86) rules: a line opening a fence names a
    file only when the rest looks like a path (```` ```calc.py ````, not ```` ```python ````); other
    lines lose a trailing colon, leading #s and wrapping backticks/asterisks."""
    name = line.strip()
    if not name or name == "..." or any(m.match(name) for m in (HEAD, DIVIDER, UPDATED)):
        return None
    fence = FENCE.match(name)
    if fence:
        rest = name[len(fence.group(1)):].strip()
        return rest if rest and ("." in rest or "/" in rest) else None
    name = name.rstrip(":").lstrip("#").strip().strip("`").strip("*").strip()
    return name or None


def _find_filename(before: list[str]) -> str | None:
    """The block's path: walk back over at most 3 lines, past lines that open a fence. Of the
    names found, Aider prefers one in the chat, then one with an extension; a reply alone
    does not know the chat's files here, so the first name with a `.` wins, else the first."""
    names = []
    for line in reversed(before[-3:]):
        name = _strip_filename(line)
        if name:
            names.append(name)
        if not FENCE.match(line):
            break
    return next((n for n in names if "." in n), names[0] if names else None)


def find_edit_blocks(text: str) -> list[EditBlock]:
    """All SEARCH/REPLACE blocks in a reply, in order. Raises EditFormatError."""
    lines = split_lines(text)
    blocks: list[EditBlock] = []
    current: str | None = None
    i = 0
    while i < len(lines):
        if not _marker(lines[i], HEAD):
            i += 1
            continue
        path = _find_filename([x.rstrip("\r\n") for x in lines[max(0, i - 3):i]]) or current
        if not path:
            raise EditFormatError("Bad or missing filename: the file path must be alone on the line before the opening fence of each SEARCH/REPLACE block.")
        search, i = [], i + 1
        while i < len(lines) and not _marker(lines[i], DIVIDER):
            if _marker(lines[i], HEAD, UPDATED):
                raise EditFormatError(f"Expected `=======` after `<<<<<<< SEARCH` in the block for {path}.")
            search.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditFormatError(f"Expected `=======` after `<<<<<<< SEARCH` in the block for {path}.")
        replace, i = [], i + 1
        while i < len(lines) and not _marker(lines[i], UPDATED, DIVIDER):
            if _marker(lines[i], HEAD):
                raise EditFormatError(f"Expected `>>>>>>> REPLACE` to close the block for {path}.")
            replace.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditFormatError(f"Expected `>>>>>>> REPLACE` to close the block for {path}.")
        blocks.append(EditBlock(path, "".join(search), "".join(replace)))
        current = path
        i += 1
    return blocks


def find_whole_files(text: str, only_file: str | None = None) -> list[tuple[str, str]]:
    """Whole-file listings: a path line, then a fenced block holding the complete new file.

    `only_file`: Aider's fallback when the path line is missing and exactly one file is in the chat.
    """
    lines = split_lines(text)
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(1)
        path = (_strip_filename(lines[i - 1]) if i > 0 else None) or only_file
        if not path:
            raise EditFormatError("No filename given before the opening fence of a file listing; put the file path alone on the line before the fence.")
        body, i = [], i + 1
        while i < len(lines) and lines[i].rstrip("\r\n") != fence:
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditFormatError(f"The file listing for {path} has no closing {fence} fence.")
        out.append((path, "".join(body)))
        i += 1
    return out


# ----------------------------------------------------------------------------------------
# Applying one block


def _lines(text: str) -> list[str]:
    if text and not text.endswith("\n"):
        text += "\n"
    return split_lines(text)


def find_all(seq: Sequence[str], pattern: Sequence[str]) -> Iterator[int]:
    """Start of every (overlapping) occurrence of `pattern` in `seq`, in order: Knuth-Morris-Pratt,
    O(len(seq) + len(pattern)) element comparisons however repetitive the lines are."""
    n = len(pattern)
    if n == 0:
        yield from range(len(seq) + 1)
        return
    fail = [0] * n  # fail[k]: length of the longest proper border of pattern[:k + 1]
    k = 0
    for i in range(1, n):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    k = 0
    for i, item in enumerate(seq):
        while k and item != pattern[k]:
            k = fail[k - 1]
        if item == pattern[k]:
            k += 1
        if k == n:
            yield i - n + 1
            k = fail[k - 1]


def _perfect(whole: list[str], part: list[str], repl: list[str]) -> str | None:
    i = next(find_all(whole, part), None)
    return None if i is None else "".join(whole[:i] + repl + whole[i + len(part):])


def _leading_ws(lines: list[str]) -> int:
    widths = [len(x) - len(x.lstrip()) for x in lines if x.strip()]
    return min(widths) if widths else 0


def _missing_indent(whole: list[str], part: list[str], repl: list[str]) -> str | None:
    """Match when every SEARCH line lacks the same leading whitespace the file has."""
    cut = min(_leading_ws(part), _leading_ws(repl)) if repl else _leading_ws(part)
    part = [x[cut:] if x.strip() else x for x in part]
    repl = [x[cut:] if x.strip() else x for x in repl]
    n = len(part)
    # candidates: windows equal to SEARCH once leading whitespace is ignored
    stripped = find_all([x.lstrip() for x in whole], [x.lstrip() for x in part])
    for i in itertools.islice(stripped, INDENT_CANDIDATES):
        chunk = whole[i:i + n]
        prefixes = {a[: len(a) - len(b)] for a, b in zip(chunk, part) if a.strip()}
        if len(prefixes) != 1:
            continue
        prefix = prefixes.pop()
        if any(a != prefix + b for a, b in zip(chunk, part) if a.strip()):
            continue
        return "".join(whole[:i] + [prefix + x if x.strip() else x for x in repl] + whole[i + n:])
    return None


def split_dots(text: str) -> list[str]:
    """`re.split(r"(^\\s*\\.\\.\\.\\n)", text, flags=re.MULTILINE)` in one pass over the lines:
    pieces alternate with separators, a separator being a `...` line together with the blank
    lines right before it (the regex's `\\s*` spans them)."""
    out: list[str] = []
    piece_start = 0  # where the current piece begins (just after the previous separator)
    blank_from = -1  # start of the run of blank lines before the current line, -1: none
    at = 0
    while at < len(text):
        nl = text.find("\n", at)
        if nl < 0:
            break  # a last line without a newline cannot be a `...` line
        line = text[at:nl]
        if line.endswith("...") and (len(line) == 3 or line[:-3].isspace()):
            start = blank_from if blank_from >= 0 else at
            out += [text[piece_start:start], text[start:nl + 1]]
            piece_start, blank_from = nl + 1, -1
        elif not line or line.isspace():
            blank_from = at if blank_from < 0 else blank_from
        else:
            blank_from = -1
        at = nl + 1
    return out + [text[piece_start:]]


def _elided(whole: str, part: str, repl: str) -> str | None:
    """`...` lines in SEARCH stand for unchanged code; each piece must match exactly once."""
    part_pieces, repl_pieces = split_dots(part), split_dots(repl)
    if len(part_pieces) == 1:
        return None
    if len(part_pieces) != len(repl_pieces) or any(a != b for a, b in zip(part_pieces[1::2], repl_pieces[1::2])):
        return None  # unpaired `...`: Aider gives up on this block
    for p, r in zip(part_pieces[::2], repl_pieces[::2]):
        if not p and not r:
            continue
        if not p:
            whole = (whole if whole.endswith("\n") or not whole else whole + "\n") + r
            continue
        if whole.count(p) != 1:
            return None
        whole = whole.replace(p, r, 1)
    return whole


def apply_block(content: str | None, block: EditBlock) -> str | None:
    """New file text, or None when SEARCH does not match. `content` None = file does not exist."""
    if not block.search.strip():
        base = content or ""
        if base and not base.endswith("\n"):
            base += "\n"
        return base + block.replace
    if content is None:
        return None
    whole, part, repl = _lines(content), _lines(block.search), _lines(block.replace)
    for attempt in (part, part[1:] if len(part) > 2 and not part[0].strip() else None):
        if attempt is None:
            continue
        new = _perfect(whole, attempt, repl) or _missing_indent(whole, attempt, repl)
        if new is not None:
            return new
    return _elided("".join(whole), "".join(part), "".join(repl))


# ----------------------------------------------------------------------------------------
# Failure text (the reflection message)


def closest_lines(search: str, content: str, threshold: float = 0.6) -> str:
    """The stretch of the file most similar to SEARCH (difflib ratio over lines, the earliest of
    equals), with a little context ("did you mean").

    Bounded: difflib's ratio 2*M/T counts M matched lines, and M is at most the number of a
    window's lines that occur in SEARCH. One sliding pass scores every window so; windows are
    tried best score first and the search stops once no score can beat the best ratio (exact),
    or after HINT_WINDOWS windows (only when very many windows tie). A SEARCH longer than
    HINT_MAX_LINES lines gets no hint."""
    part, whole = search.splitlines(), content.splitlines()
    if not part or not whole or len(part) > HINT_MAX_LINES:
        return ""
    m = min(len(part), len(whole))
    wanted = set(part)
    hits = [line in wanted for line in whole]
    score = sum(hits[:m])
    scores = [score]
    for i in range(1, len(whole) - m + 1):
        score += hits[i + m - 1] - hits[i - 1]
        scores.append(score)
    total = len(part) + m
    best, best_i = 0.0, 0
    for i in heapq.nsmallest(HINT_WINDOWS, range(len(scores)), key=lambda i: (-scores[i], i)):
        if 2 * scores[i] / total < max(best, threshold):
            break  # no window left can reach the best ratio so far, nor the threshold
        ratio = difflib.SequenceMatcher(None, part, whole[i:i + m]).ratio()
        if ratio > best or (ratio == best and i < best_i):
            best, best_i = ratio, i
    if best < threshold:
        return ""
    lo, hi = max(0, best_i - 3), min(len(whole), best_i + len(part) + 3)
    return "\n".join(whole[lo:hi]) + "\n"


def failure_report(failed: list[tuple[EditBlock, str | None]], applied: int, fence: str = "```") -> str:
    """The reflection Aider sends when blocks fail: which block, a closest-match hint, what applied."""
    s = "s" if len(failed) > 1 else ""
    out = [f"# {len(failed)} SEARCH/REPLACE block{s} failed to match!\n"]
    for block, content in failed:
        out.append(f"## No exact match: this SEARCH block did not match the lines of {block.path}")
        out.append(f"<<<<<<< SEARCH\n{block.search}=======\n{block.replace}>>>>>>> REPLACE\n")
        if content is None:
            out.append(f"{block.path} does not exist; use an empty SEARCH section to create it.\n")
            continue
        hint = closest_lines(block.search, content)
        if hint:
            out.append(f"Perhaps you meant these lines, which are in {block.path}:\n\n{fence}\n{hint}{fence}\n")
        if block.replace.strip() and block.replace in content:
            out.append(f"Is this block needed? Its REPLACE lines are already in {block.path}.\n")
    out.append("A SEARCH section must match existing lines of the file exactly: every character, "
               "whitespace, comment and docstring.\n")
    if applied:
        s2 = "s" if applied > 1 else ""
        out.append(f"# The other {applied} SEARCH/REPLACE block{s2} applied cleanly.\n"
                   "Do not send them again; reply only with corrected versions of the failed block"
                   f"{s} above.")
    return "\n".join(out)


def render_block(path: str, search: str, replace: str, fence: str = "```") -> str:
    """One SEARCH/REPLACE block in Aider's layout (the inverse of `find_edit_blocks`)."""
    def body(text: str) -> str:
        return text if not text or text.endswith("\n") else text + "\n"

    return f"{path}\n{fence}\n<<<<<<< SEARCH\n{body(search)}=======\n{body(replace)}>>>>>>> REPLACE\n{fence}\n"


def render_whole(path: str, content: str, fence: str = "```") -> str:
    body = content if not content or content.endswith("\n") else content + "\n"
    return f"{path}\n{fence}\n{body}{fence}\n"


def choose_fence(*texts: str) -> str:
    """Backticks longer than any backtick run that starts a line of the texts."""
    longest = 2
    for t in texts:
        for m in re.finditer(r"^(`{3,})", t, re.MULTILINE):
            longest = max(longest, len(m.group(1)))
    return "`" * (longest + 1)
