def word_count(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def top_words(text, n):
    counts = word_count(text)
    return sorted(counts, key=lambda w: (-counts[w], w))[:n]
