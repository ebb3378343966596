"""Reading model replies safely: the limits every parser shares and the linear scanners they use.

A reply is untrusted text from a policy that is optimised against us, so every parser must map
ANY string to tool calls or a `FormatError`, in time linear in the reply's length:

  * size: a reply longer than `spec.max_reply_chars` is a format error before any parsing;
  * JSON: nesting deeper than `MAX_JSON_DEPTH`, integers of more than `MAX_INT_DIGITS` digits,
    and non-finite numbers (`NaN`, `Infinity`, `1e999`) are format errors with a clear message
    (the stdlib would raise RecursionError / ValueError, or hand back inf);
  * numbers the tools use (line numbers, refs, durations, timeouts) are range-checked by each
    style with `bounded_int` / `finite_number`;
  * tags and fences are found with `str.find` scans, never with lazy `(.*?)` regexes that
    rescan the rest of the reply from every unmatched opening tag (quadratic).

`guarded` wraps each style's `parse`: the size and type checks, and a last line of defence that
turns an unexpected exception into a format error marked with `crash` (the property tests and
`scripts/fuzz_parsers.py` fail on any such mark, so it never hides a bug).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from harnessrl.harness.base import FormatError, ToolCall

MAX_JSON_DEPTH = 32  # no tool call of any style needs more than 3 levels
MAX_INT_DIGITS = 18  # every integer a tool takes fits in 18 digits (< 10**18)

ParseResult = list[ToolCall] | FormatError


def guarded(parse: Callable[[Any, str], ParseResult]) -> Callable[[Any, str], ParseResult]:
    """Decorate `Harness.parse`: not-text and over-long replies are format errors before parsing,
    and an exception that still escapes becomes a format error flagged `crash=<type>`."""

    @functools.wraps(parse)
    def wrapper(self: Any, text: str) -> ParseResult:
        if not isinstance(text, str):
            return FormatError("the reply is not text")
        limit = self.spec.max_reply_chars
        if len(text) > limit:
            return FormatError(f"the reply is {len(text):,} characters long; at most {limit:,} are read. "
                               "Answer again, shorter: one action, without repeating long text")
        try:
            return parse(self, text)
        except Exception as err:  # noqa: BLE001 - a parser bug must not end a training run
            return FormatError(f"the reply could not be parsed ({type(err).__name__})", crash=type(err).__name__)

    return wrapper


# ----------------------------------------------------------------------------------------
# JSON with limits

_JSON_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)  # an escape pair, a quote or a bracket: linear


class ReplyError(ValueError):
    """A reply broke a limit; the message is shown to the model."""


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when brackets outside JSON strings nest more than `limit` deep.

    An escape pair outside a string hides one bracket from the count, but JSON rejects the
    backslash before the decoder descends past it, so the count bounds the decoder's depth."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    in_string = False
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token == '"':
            in_string = not in_string
        elif in_string or len(token) == 2:
            continue
        elif token in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth = max(0, depth - 1)
    return False


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ReplyError(f"a number has {len(digits.lstrip('-')):,} digits; numbers in a reply may have at most {MAX_INT_DIGITS}")
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ReplyError(f"the number {text[:40]} is too large; use a finite number")
    return value


def _parse_constant(name: str) -> float:
    raise ReplyError(f"{name} is not a number JSON allows; use a finite number")


def loads(text: str) -> Any:
    """`json.loads` within the reply limits. Raises ValueError (json.JSONDecodeError or
    ReplyError) with a message for the model; never RecursionError or OverflowError."""
    if too_deep(text):
        raise ReplyError(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    return json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)


def json_error(err: ValueError) -> str:
    """A short description of a `loads` failure."""
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg} at character {err.pos}"
    return str(err)


# ----------------------------------------------------------------------------------------
# Numbers the tools take


def bounded_int(text: str, low: int = 0, high: int = 10**9) -> int | None:
    """An optionally signed decimal integer in [low, high], else None (never a 4,300-digit int())."""
    s = text.strip()
    digits = s[1:] if s[:1] in "+-" else s
    if not digits or len(digits) > len(str(max(abs(low), abs(high)))) + 1 or not digits.isascii() or not digits.isdigit():
        return None
    value = int(s)
    return value if low <= value <= high else None


def finite_number(value: Any, low: float, high: float) -> float | None:
    """A JSON number (not a bool) inside [low, high] as a float, else None (never OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and not low <= value <= high:  # compare before float(): 10**400 overflows
        return None
    number = float(value)
    return number if math.isfinite(number) and low <= number <= high else None


# ----------------------------------------------------------------------------------------
# Linear scanners


def tag_spans(text: str, open_tag: str, close_tag: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each body between `open_tag` and the next `close_tag`, left to right and
    non-overlapping, as `re.finditer(open + "(.*?)" + close, DOTALL)` finds them — in linear time:
    once no closing tag follows an opening one, none follows any later one either."""
    at = text.find(open_tag)
    while at >= 0:
        body = at + len(open_tag)
        end = text.find(close_tag, body)
        if end < 0:
            return
        yield body, end
        at = text.find(open_tag, end + len(close_tag))


_CALL_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
_BLANK = " \t\n\r"


def call_spans(text: str, open_tag: str, close_tag: str, *, open_end: bool = False) -> Iterator[tuple[int, int]]:
    """As `tag_spans`, except that a body starting a JSON object (after blanks) ends after that object.

    A call's JSON may hold the closing tag inside a string (a file written with the text
    `</tool_call>`); cutting at the first closing tag would hand the parser half an object. So
    the object is decoded string-aware (`raw_decode`) and the body ends at the closing tag after
    it, blanks between; with `open_end`, at the end of the reply too (generation stopped at the
    closing tag). Anything else (not JSON, JSON that does not parse, text before the tag) falls
    back to the first closing tag, whose body the caller then reports as it always did.

    Linear time: a decode that fails has still read up to its error, so the characters the
    decodes read are counted, and past a few times the reply's length no more are tried.
    """
    budget = 4 * len(text) + 4096
    at = text.find(open_tag)
    while at >= 0:
        body = at + len(open_tag)
        end = -1
        start = body
        while start < len(text) and text[start] in _BLANK:
            start += 1
        if budget > 0 and text.startswith("{", start):
            stop = start
            try:
                _, stop = _CALL_DECODER.raw_decode(text, start)
                while stop < len(text) and text[stop] in _BLANK:
                    stop += 1
                if text.startswith(close_tag, stop) or (open_end and stop == len(text)):
                    end = stop
            except json.JSONDecodeError as err:
                stop = err.pos
            except (ValueError, RecursionError):  # a limit (ReplyError) or nesting: the body reports it
                stop = len(text)
            budget -= max(stop - start, 1)
        if end < 0:
            end = text.find(close_tag, body)
        if end < 0:
            return
        yield body, end
        at = text.find(open_tag, end + len(close_tag))


def fenced_blocks(text: str) -> list[str]:
    """Bodies of the fenced blocks (an opening line starting with ``` and a closing line of only
    ``` and blanks), as `re.findall(r"^```[^\\n]*\\n(.*?)^```[ \\t]*$", text, DOTALL | MULTILINE)`
    finds them, in one pass over the lines."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines) - 1:  # an opening line needs the newline after it
        if not lines[i].startswith("```"):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not (lines[j].startswith("```") and not lines[j][3:].strip(" \t")):
            j += 1
        if j == len(lines):
            break  # no closing line after this opening, so none after any later one
        blocks.append("".join(line + "\n" for line in lines[i + 1:j]))
        i = j + 1
    return blocks
