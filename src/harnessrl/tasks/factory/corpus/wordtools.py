"""Word-level text analysis."""

import re

STOPWORDS = {"a", "an", "the", "and", "or", "of", "to", "in"}


def words(text):
    """The lower-case words of `text` (runs of letters and apostrophes)."""
    return re.findall(r"[a-z']+", text.lower())


def word_frequencies(text):
    """{word: count} over words(text), stopwords excluded."""
    counts = {}
    for w in words(text):
        if w in STOPWORDS:
            continue
        counts[w] = counts.get(w, 0) + 1
    return counts


def longest_word(text):
    """The first longest word, or "" when there is none."""
    best = ""
    for w in words(text):
        if len(w) > len(best):
            best = w
    return best


def acronym(phrase):
    """Upper-case first letters of the words of `phrase`, hyphens separating words too."""
    return "".join(w[0].upper() for w in phrase.replace("-", " ").split())


def is_anagram(a, b):
    """True when the letters of `a` and `b` are the same multiset (case and non-letters ignored)."""
    clean = lambda s: sorted(c for c in s.lower() if c.isalpha())  # noqa: E731
    return clean(a) == clean(b)


def pig_latin(word):
    """Leading consonants moved to the end plus "ay"; a word starting with a vowel gets "way"."""
    vowels = "aeiou"
    if word[0] in vowels:
        return word + "way"
    i = 0
    while i < len(word) and word[i] not in vowels:
        i += 1
    return word[i:] + word[:i] + "ay"


def sentence_count(text):
    """How many sentences end in '.', '!' or '?' (a run of them ends one sentence)."""
    return len(re.findall(r"[^.!?]+[.!?]+", text))


def title_case(text, small=("a", "an", "the", "of", "and")):
    """Capitalize every word except the small ones, but always the first and the last."""
    parts = text.lower().split()
    out = []
    for i, w in enumerate(parts):
        if w in small and 0 < i < len(parts) - 1:
            out.append(w)
        else:
            out.append(w.capitalize())
    return " ".join(out)


def initials(name):
    """"Ada King Lovelace" -> "A.K.L."."""
    return "".join(part[0].upper() + "." for part in name.split())


def mask_words(text, banned):
    """Each banned word (whole words, any case) replaced by as many '*' as it has letters."""
    def repl(match):
        w = match.group(0)
        return "*" * len(w) if w.lower() in banned else w
    return re.sub(r"[A-Za-z]+", repl, text)
