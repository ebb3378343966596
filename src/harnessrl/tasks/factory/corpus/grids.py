"""Helpers for grids stored as lists of rows."""


def transpose(grid):
    """Rows become columns."""
    if not grid:
        return []
    return [[row[c] for row in grid] for c in range(len(grid[0]))]


def rotate_clockwise(grid):
    """The grid turned a quarter turn clockwise."""
    return [list(row) for row in zip(*grid[::-1])]


def neighbours(grid, r, c):
    """The values of the up to 4 orthogonal neighbours of (r, c), in the order up, down, left, right."""
    out = []
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        rr, cc = r + dr, c + dc
        if 0 <= rr < len(grid) and 0 <= cc < len(grid[0]):
            out.append(grid[rr][cc])
    return out


def count_islands(grid):
    """How many 4-connected groups of 1s the grid of 0/1 has."""
    seen = set()
    count = 0
    for r in range(len(grid)):
        for c in range(len(grid[0])):
            if grid[r][c] == 1 and (r, c) not in seen:
                count += 1
                todo = [(r, c)]
                while todo:
                    cr, cc = todo.pop()
                    if (cr, cc) in seen:
                        continue
                    seen.add((cr, cc))
                    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                        nr, nc = cr + dr, cc + dc
                        if 0 <= nr < len(grid) and 0 <= nc < len(grid[0]) and grid[nr][nc] == 1:
                            todo.append((nr, nc))
    return count


def row_sums(grid):
    """The sum of each row."""
    return [sum(row) for row in grid]


def column_sums(grid):
    """The sum of each column."""
    if not grid:
        return []
    return [sum(row[c] for row in grid) for c in range(len(grid[0]))]


def diagonal(grid):
    """The main diagonal of a square grid."""
    return [grid[i][i] for i in range(len(grid))]


def is_magic_square(grid):
    """True when every row, column and both diagonals of the square grid have the same sum."""
    n = len(grid)
    target = sum(grid[0])
    sums = row_sums(grid) + column_sums(grid)
    sums.append(sum(grid[i][i] for i in range(n)))
    sums.append(sum(grid[i][n - 1 - i] for i in range(n)))
    return all(s == target for s in sums)


def flood_fill(grid, r, c, value):
    """A copy of the grid with the 4-connected region of (r, c) set to `value`."""
    out = [row[:] for row in grid]
    old = out[r][c]
    if old == value:
        return out
    todo = [(r, c)]
    while todo:
        cr, cc = todo.pop()
        if 0 <= cr < len(out) and 0 <= cc < len(out[0]) and out[cr][cc] == old:
            out[cr][cc] = value
            todo.extend([(cr + 1, cc), (cr - 1, cc), (cr, cc + 1), (cr, cc - 1)])
    return out


def render(grid, on="#", off="."):
    """Rows of 0/1 as lines of `on`/`off` characters joined by newlines."""
    return "\n".join("".join(on if v else off for v in row) for row in grid)
