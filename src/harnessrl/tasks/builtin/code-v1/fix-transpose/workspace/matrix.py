def transpose(rows):
    n = len(rows)
    return [[rows[j][i] for j in range(n)] for i in range(n)]


def multiply(a, b):
    cols = transpose(b)
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]
