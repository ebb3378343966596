def word_count(s):
    return len(s.split())


def reverse_words(s):
    return " ".join(s.split())
