"""What assets show in the Dagster UI: column schemas from the table registry, previews."""

from __future__ import annotations

import dagster as dg

from lineage_assets.warehouse import tables as t


def markdown_table(rows: list[dict]) -> str:
    """A small markdown preview table (cells cut at 80 characters)."""
    if not rows:
        return "_no rows_"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        lines.append("| " + " | ".join(str(row[c]).replace("|", "\\|")[:80] for c in cols) + " |")
    return "\n".join(lines)


def column_schema(table: t.Table) -> dg.TableSchema:
    return dg.TableSchema(columns=[
        dg.TableColumn(f.name, t.type_text(f.dataType), description="partition column" if f.name in table.partition_by else None)
        for f in table.schema.fields
    ])


def table_metadata(table: t.Table) -> dict:
    """What every asset of a registry table declares: its `dagster/column_schema` and partitioning."""
    return {"dagster/column_schema": column_schema(table), "partition_by": ", ".join(table.partition_by) or "none"}


def spec(table: t.Table, group: str, **kwargs) -> dg.AssetSpec:
    """The asset spec of a registry table: its description and `table_metadata`."""
    return dg.AssetSpec(
        table.name, group_name=group, kinds={"spark", "parquet"}, description=table.description,
        metadata=table_metadata(table), **kwargs,
    )
