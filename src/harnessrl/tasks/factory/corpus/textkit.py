"""Small string helpers."""

import re

VOWELS = "aeiou"


def slugify(text):
    """Lower-case `text`, turn each run of non-alphanumerics into one '-', strip '-' at both ends."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower())
    return slug.strip("-")


def count_vowels(text):
    """How many letters of `text` are vowels (a, e, i, o, u; either case)."""
    count = 0
    for ch in text.lower():
        if ch in VOWELS:
            count += 1
    return count


def capitalize_words(text):
    """Upper-case the first letter of every space-separated word, keep the rest as it is."""
    words = text.split(" ")
    return " ".join(w[:1].upper() + w[1:] for w in words)


def truncate(text, width, ellipsis="..."):
    """`text` cut to at most `width` characters; when cut, the end is replaced by `ellipsis`."""
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return ellipsis[:width]
    return text[:width - len(ellipsis)] + ellipsis


def is_palindrome(text):
    """True when the letters and digits of `text` read the same backwards (case ignored)."""
    chars = [c.lower() for c in text if c.isalnum()]
    return chars == chars[::-1]


def reverse_words(text):
    """The words of `text` (split on whitespace) in reverse order, joined by single spaces."""
    return " ".join(reversed(text.split()))


def pad_left(text, width, fill=" "):
    """`text` right-aligned in `width` characters, padded on the left with `fill`."""
    missing = width - len(text)
    if missing <= 0:
        return text
    return fill * missing + text


def common_prefix(a, b):
    """The longest string both `a` and `b` start with."""
    n = 0
    limit = min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return a[:n]


def char_histogram(text):
    """{character: count} for every non-space character of `text`."""
    counts = {}
    for ch in text:
        if ch == " ":
            continue
        counts[ch] = counts.get(ch, 0) + 1
    return counts


def camel_to_snake(name):
    """`parseHttpHeader` -> `parse_http_header`: an underscore before each capital, all lower-case."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
