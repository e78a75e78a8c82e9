"""Recipes: CDAP Wrangler directives, their column lineage without data, and their execution.

- `parse(text) -> Recipe` reads Wrangler syntax (`RecipeError` names the line of a problem);
- `lineage(recipe, input_columns, output_columns=None) -> RecipeLineage` backtracks through the
  directives: backward trees, forward sets, labels and what only the data could settle;
- `apply(df, recipe)` runs the same directives on a PySpark DataFrame.
"""

from lineage_assets.recipes.directives import DIRECTIVES
from lineage_assets.recipes.column_lineage import (
    Operation,
    RecipeEdge,
    RecipeLineage,
    TraceNode,
    Unresolved,
    lineage,
)
from lineage_assets.recipes.syntax import Recipe, RecipeError, Step, parse


def apply(df, recipe, **kwargs):  # noqa: ANN001, ANN201 - imports PySpark only when called
    from lineage_assets.recipes.spark_apply import apply as _apply

    return _apply(df, recipe, **kwargs)


__all__ = [
    "DIRECTIVES",
    "Operation",
    "Recipe",
    "RecipeEdge",
    "RecipeError",
    "RecipeLineage",
    "Step",
    "TraceNode",
    "Unresolved",
    "apply",
    "lineage",
    "parse",
]
