"""The columns a Spark SQL expression reads, found by parsing it (sqlglot, Spark dialect)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError


@dataclass(frozen=True)
class ExpressionColumns:
    """What an expression reads: named top-level columns, and whether it reads every column."""

    columns: tuple[str, ...]
    reads_all: bool = False


class ExpressionError(ValueError):
    pass


@lru_cache(maxsize=4096)
def columns_read(expression: str) -> ExpressionColumns:
    """The top-level columns an expression reads, in order of first use.

    `a.b` reads column `a` (a struct field); lambda variables (`x -> x + a`) are not columns;
    `*` reads every column.
    """
    try:
        tree = sqlglot.parse_one(expression, dialect="spark")
    except (ParseError, TokenError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExpressionError(f"not a Spark SQL expression: {message}") from None
    if tree is None:
        raise ExpressionError("empty expression")
    if isinstance(tree, (exp.Select, exp.Query, exp.Command)) and not isinstance(tree, exp.Subquery):
        raise ExpressionError("a column expression is expected, not a statement")
    seen: dict[str, None] = {}
    reads_all = False
    for node in tree.walk():
        if isinstance(node, exp.Star):
            reads_all = True
        elif isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                reads_all = True
                continue
            parts = node.parts
            seen.setdefault(parts[0].name if parts else node.name, None)
    return ExpressionColumns(tuple(seen), reads_all)
