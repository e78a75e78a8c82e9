"""Helpers for what assets show in the Dagster UI."""


def markdown_table(rows: list[dict]) -> str:
    """A small markdown preview table (cells cut at 80 characters)."""
    if not rows:
        return "_no rows_"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        lines.append("| " + " | ".join(str(row[c]).replace("|", "\\|")[:80] for c in cols) + " |")
    return "\n".join(lines)
