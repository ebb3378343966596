def top_scores(scores, n):
    return sorted(scores)[:n]


def bottom_scores(scores, n):
    return sorted(scores)[:n]
