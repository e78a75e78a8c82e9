"""What assets show in the Dagster UI: column schemas from the table registry, previews."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Callable

import dagster as dg

from lineage_assets.defs.resources import failed_task_attempts
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


PICTURES = "pictures"  # under the warehouse: the latest snapshot's picture, beside the tables
PICTURE_SETTING = "LINEAGE_SNAPSHOT_PICTURE"


def snapshot_pictures_on(environ=os.environ) -> bool:
    """Whether the snapshot draws its picture: `LINEAGE_SNAPSHOT_PICTURE` (default on; `0`,
    `false`, `off` or `no` turn it off: a snapshot then costs no DuckDB load and no Graphviz run)."""
    return environ.get(PICTURE_SETTING, "1").strip().lower() not in ("0", "false", "off", "no")


def graph_picture_metadata(warehouse: str, log: Callable[[str], None] = print) -> dict:
    """What the snapshot's `current_lineage` materialization shows of the current graph: a PNG
    of its largest components embedded in markdown (`graph_picture`), what it leaves out
    (`graph_picture_summary`), and the SVG and PNG written to <warehouse>/pictures/
    (`graph_picture_svg`, `graph_picture_png`). A picture that cannot be drawn (Graphviz
    missing) is said so in `graph_picture`; the snapshot is committed by then and stands."""
    from lineage_assets.query.lineage_query import GraphPart, LineageQuery
    from lineage_assets.query.picture import snapshot_picture

    try:
        with LineageQuery(warehouse, columns=False, part=GraphPart()) as query:  # loads the part it draws
            picture = snapshot_picture(query)
        folder = os.path.join(warehouse, PICTURES)
        os.makedirs(folder, exist_ok=True)
        paths = {}
        for ext, data in (("svg", picture.svg), ("png", picture.png)):
            path = os.path.join(folder, f"current_graph.{ext}")
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
            paths[ext] = path
    except Exception as exc:  # noqa: BLE001 - a picture is an attachment: the committed snapshot stands without it
        log(f"no picture of the current graph: {exc}")
        return {"graph_picture": dg.MetadataValue.md(f"_no picture of the current graph: {exc}_")}
    image = base64.b64encode(picture.png).decode("ascii")
    return {
        "graph_picture": dg.MetadataValue.md(f"{picture.summary}\n\n![current lineage graph](data:image/png;base64,{image})"),
        "graph_picture_summary": dg.MetadataValue.text(picture.summary),
        "graph_picture_svg": dg.MetadataValue.path(paths["svg"]),
        "graph_picture_png": dg.MetadataValue.path(paths["png"]),
    }


FAILED_TASKS = "spark_failed_task_attempts"


def failed_tasks_since(spark, before: int, warn: Callable[[str], None]) -> dict:
    """{FAILED_TASKS: task attempts that failed since `before` (`resources.failed_task_attempts`)}:
    Spark tried them again (`resources.local_tries`) and the step went on, but the UI and the run's
    log say so, with a warning, instead of leaving it to the JVM's log."""
    failed = failed_task_attempts(spark) - before
    if failed:
        warn(f"{failed} Spark task attempt(s) failed and were tried again (the JVM's log has each error)")
    return {FAILED_TASKS: failed}
