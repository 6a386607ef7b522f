"""Plain-text tables for the terminal."""


def render(headers, rows, align=None):
    cells = [[str(c) for c in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or ["<"] * len(headers)

    def line(row):
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(row, align, widths)).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)
