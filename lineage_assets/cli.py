"""`lineage-assets`: ingest a drop folder, run the demo, print what the warehouse holds."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path

from lineage_assets.settings import DATA_DIR, PROJECT_ROOT, Folders, LineageSettings, parse_start_date, start_date_for


def _instance():
    from dagster import DagsterInstance

    home = os.environ.get("DAGSTER_HOME")
    if not home:
        home = str(PROJECT_ROOT / ".dagster_home")
        os.environ["DAGSTER_HOME"] = home
    Path(home).mkdir(parents=True, exist_ok=True)
    config = Path(home) / "dagster.yaml"
    if not config.exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        config.write_text((PROJECT_ROOT / "dagster.yaml").read_text())
    return DagsterInstance.get()


def _ingest(settings: LineageSettings) -> int:
    from lineage_assets.runner import ingest
    from lineage_assets.warehouse.summary import format_summary

    if not Path(settings.drop_dir).exists():
        print(f"error: drop folder {settings.drop_dir} does not exist", file=sys.stderr)
        return 2
    if _a_file("drop folder", settings.drop_dir) or _a_file("warehouse", settings.warehouse):
        return 2
    from lineage_assets.warehouse.commits import WarehouseBusy

    try:
        with _instance() as instance:
            report = ingest(settings, instance, log=lambda m: print(m, flush=True))
    except WarehouseBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\n{len(report.runs)} run(s), {len(report.failed)} failed")
    print(format_summary(settings.warehouse))
    return 1 if report.failed else 0


def _a_file(what: str, path: str) -> bool:
    """Whether `path`, given for a folder, is a file (said on stderr)."""
    if os.path.exists(path) and not os.path.isdir(path):
        print(f"error: {what} {path} is a file, not a folder", file=sys.stderr)
        return True
    return False


def _no_warehouse(warehouse: str) -> bool:
    """Whether `warehouse` is no warehouse (said on stderr): the commands that read it exit with 2.
    A warehouse is a folder with a `_commits` folder (its first ingest makes it): a folder
    without one (the data folder above it, say) is not taken for an empty warehouse."""
    from lineage_assets.warehouse.commits import COMMITS

    path = Path(warehouse)
    if (path / COMMITS).is_dir():
        return False
    if not path.exists():
        print(f"error: warehouse {warehouse} does not exist (run `lineage-assets ingest` or `make demo` first)", file=sys.stderr)
    elif not _a_file("warehouse", warehouse):
        below = sorted(p.parent.name for p in path.glob(f"*/{COMMITS}") if p.is_dir())
        hint = f"; its folder {below[0]!r} is one" if below else " (no ingest has committed to it yet)"
        print(f"error: {warehouse} is not a warehouse: it has no {COMMITS} folder{hint}", file=sys.stderr)
    return True


def _answered(warehouse: str, ask, usage_errors: tuple[type[Exception], ...] = (ValueError,)) -> tuple[int, object]:
    """(exit code, answer) of `ask(query)` on the warehouse: 0 answered, 2 a bad argument (one of
    `usage_errors`) or no warehouse, 3 not found, 4 the warehouse could not be read; errors printed."""
    from lineage_assets import LineageQuery, NodeNotFound

    if _no_warehouse(warehouse):
        return 2, None
    try:
        with LineageQuery(warehouse) as query:
            return 0, ask(query)
    except NodeNotFound as exc:
        print(f"not found: {exc}", file=sys.stderr)
        return 3, None
    except usage_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2, None
    except OSError as exc:  # WarehouseReadError: a committed file could not be read
        print(f"error: {exc}", file=sys.stderr)
        return 4, None


def _query(args, warehouse: str) -> int:
    from lineage_assets.query.render import as_json, as_table, as_tree

    code, answer = _answered(warehouse, lambda query: _ask(query, args))
    if code:
        return code
    if getattr(args, "tree", False):
        print(as_tree(answer))
    elif getattr(args, "table", False):
        print(as_table(answer))
    else:
        print(as_json(answer))
    return 0


def _ask(query, args):
    """The answer to a `lineage-assets query` question."""
    question = args.question
    if question == "lineage":
        return query.lineage(args.node, depth=args.depth, include_temporary=args.include_temporary)
    if question == "column-lineage":
        return query.column_lineage(
            args.node, depth=args.depth, with_downstream=args.downstream, dataset_version=args.version, lineage_at=args.at,
            include_temporary=args.include_temporary,
        )
    if question == "fields":
        return query.fields(args.namespace, args.name, args.start, args.end, prefix=args.prefix, include_current=args.include_current)
    if question == "field-mappings":
        return query.field_mappings(args.namespace, args.name, args.start, args.end, direction=args.direction, levels=args.levels)
    if question == "field-operations":
        return query.field_operations(args.namespace, args.name, args.field, args.start, args.end, direction=args.direction)
    if question == "datahub":
        return query.fine_grained_lineage(args.namespace, args.name, path_version=args.path_version)
    if question == "column-directives":
        return query.column_directives(args.namespace, args.name, args.field, args.start, args.end)
    if question == "column-history":
        return query.column_history(args.node, depth=args.depth)
    if question == "column-impact":
        return query.column_impact(args.node, depth=args.depth)
    return query.dataset(args.namespace, args.name)


def _tag(args, warehouse: str, env: Folders) -> int:
    """`lineage-assets tag set|remove|list`."""
    from lineage_assets.tagging import change_tag, parse_assignment, resolve_target

    if args.tag_command == "list":
        from lineage_assets.query.render import as_json

        code, answer = _answered(warehouse, lambda query: query.tagged_fields(args.key, args.value, propagate=args.propagate))
        if code:
            return code
        if args.table:
            for t in answer.root:
                how = "direct" if t.direct else "via " + " -> ".join([t.taggedField, *[h.to for h in t.path]])
                print(f"{t.id}\t{t.key}={t.value}\t{how}")
        else:
            print(as_json(answer))
        return 0
    drop_dir = os.path.abspath(args.drop_dir or env.drop_dir)
    if not os.path.isdir(drop_dir):  # a mistyped folder would take the tag where no sensor looks
        print(f"error: drop folder {drop_dir} does not exist (or is not a folder); create it or give --drop-dir", file=sys.stderr)
        return 2
    try:
        *node, item = args.items
        if len(node) > 1:
            raise ValueError(f"expected [NODE] {'KEY=VALUE' if args.tag_command == 'set' else 'KEY'}, got {' '.join(args.items)}")
        if node:
            namespace, name, field = resolve_target(node[0], warehouse)
        elif args.namespace and args.name:
            namespace, name, field = args.namespace, args.name, args.field
        else:
            raise ValueError("give a node (datasetField:NS:NAME:FIELD or dataset:NS:NAME) or --namespace and --name")
        if args.tag_command == "set":
            key, value = parse_assignment(item)
            tags = change_tag(drop_dir, warehouse, namespace, name, field, key, value, source=args.source)
        else:
            tags = change_tag(drop_dir, warehouse, namespace, name, field, item, remove=True, source=args.source)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        from lineage_assets.query.lineage_query import WarehouseReadError
        from lineage_assets.warehouse.commits import CorruptCommit

        if isinstance(exc, (WarehouseReadError, CorruptCommit)):
            print(f"error: {exc}", file=sys.stderr)
            return 4
        print(f"error: cannot write the DatasetEvent into {drop_dir}: {exc}", file=sys.stderr)
        return 2
    where = f"{namespace} {name}" + (f" :: {field}" if field else "")
    print(f"{where}: {len(tags)} tag(s) now; a DatasetEvent is in {drop_dir} (the next ingest records it)")
    for t in tags:
        print(f"  {t.field or '(dataset)'}  {t.key}={t.value}")
    return 0


def _graph(args, warehouse: str) -> int:
    """`lineage-assets graph`: the picture of an answer, written to -o (format from its extension)."""
    from lineage_assets.query.picture import GraphvizFailed, GraphvizMissing, format_of, picture

    try:
        fmt = format_of(args.output)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        code, data = _answered(warehouse, lambda query: picture(query, args.node, fmt, columns=args.columns, depth=args.depth,
                                                                with_downstream=args.with_downstream, max_nodes=args.max_nodes),
                              usage_errors=(ValueError, GraphvizMissing))
    except GraphvizFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if code:
        return code
    out = Path(args.output)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        print(f"error: cannot write {out}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({fmt}, {len(data)} bytes)")
    return 0


def _partition_rules(names: list[list[str]]) -> int:
    import json

    from lineage_assets.identity.partitions import describe, fold_name, load_rules

    try:
        rules = load_rules()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out: dict = {"rules": describe(rules)}
    if names:
        out["folded"] = [
            {"namespace": ns, "name": name, **dict(zip(("dataset_name", "partition"), fold_name(ns, name, rules)))}
            for ns, name in names
        ]
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lineage-assets", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p_ingest = sub.add_parser("ingest", help="process every drop in a folder through the Dagster definitions")
    p_ingest.add_argument("--drop-dir", required=True)
    p_ingest.add_argument("--warehouse", required=True)
    p_ingest.add_argument("--start-date", default=None, help="first daily partition, YYYY-MM-DD (default LINEAGE_START_DATE; "
                          "else, for the project's own data/warehouse, the first day `demo` recorded; else 2020-01-01)")

    p_demo = sub.add_parser("demo", help="write the demo drops and ingest them on the project's instance")
    p_demo.add_argument("--data-dir", default=str(DATA_DIR))
    p_demo.add_argument("--days", type=int, default=4)

    p_summary = sub.add_parser("summary", help="row counts of the warehouse tables")
    p_summary.add_argument("--warehouse", default=None)

    p_files = sub.add_parser("files", help="the committed Parquet files of a table (what a reader outside the project reads)")
    p_files.add_argument("table")
    p_files.add_argument("--warehouse", default=None)

    p_query = sub.add_parser("query", help="answer a lineage question from the warehouse (JSON by default)")
    q_sub = p_query.add_subparsers(dest="question", required=True)
    q_lineage = q_sub.add_parser("lineage", help="the current graph around a job or dataset")
    q_lineage.add_argument("node", help="job:NAMESPACE:NAME, dataset:NAMESPACE:NAME or a DataHub dataset URN")
    q_lineage.add_argument("--depth", type=int, default=20, help="job hops (default 20)")
    q_column = q_sub.add_parser("column-lineage", help="field-level lineage of a field, dataset or job")
    q_column.add_argument("node", help="datasetField:NS:NAME:FIELD, dataset:NS:NAME or job:NS:NAME (optionally #VERSION), "
                          "or a DataHub dataset or schemaField URN")
    q_column.add_argument("--depth", type=int, default=20, help="field hops (default 20)")
    q_column.add_argument("--downstream", action="store_true", help="add downstream lineage")
    when = q_column.add_mutually_exclusive_group()
    when.add_argument("--at", default=None, help="point in time (ISO-8601, UTC unless an offset is given; a date alone: the end of that day)")
    when.add_argument("--version", default=None, help="point in time by dataset version id")
    for q in (q_lineage, q_column):
        q.add_argument("--tree", action="store_true", help="print an indented tree instead of JSON")
        q.add_argument("--include-temporary", action="store_true", help="show temporary datasets instead of bridging them")
    q_fields = q_sub.add_parser("fields", help="a dataset's fields with column lineage in a time window (CDAP)")
    q_mappings = q_sub.add_parser("field-mappings", help="dataset-to-dataset field mappings in a time window, several levels (CDAP)")
    q_operations = q_sub.add_parser("field-operations", help="the detailed operations behind one field in a time window (CDAP)")
    q_dataset = q_sub.add_parser("dataset", help="the dataset resource with its column lineage")
    q_datahub = q_sub.add_parser("datahub", help="a dataset's current column lineage as DataHub's upstreamLineage aspect")
    q_directives = q_sub.add_parser("column-directives", help="the recipe directives applied to a column, run by run, in a time window")
    q_history = q_sub.add_parser("column-history", help="how a column got to its current state: backward through directives, jobs and datasets")
    q_impact = q_sub.add_parser("column-impact", help="the columns a column impacted: forward through directives, jobs and datasets")
    for q in (q_history, q_impact):
        q.add_argument("node", help="datasetField:NS:NAME:FIELD or a DataHub schemaField URN")
        q.add_argument("--depth", type=int, default=20, help="field hops (default 20)")
        q.add_argument("--tree", action="store_true", help="print an indented tree instead of JSON")
    for q in (q_fields, q_mappings, q_operations, q_dataset, q_datahub, q_directives):
        q.add_argument("namespace", help="the dataset's namespace, or its DataHub URN (then no name)")
        q.add_argument("name", nargs="?", default=None)
    for q in (q_operations, q_directives):
        q.add_argument("field", nargs="?", default=None, help="(none when NAMESPACE is a schemaField URN)")
    q_datahub.add_argument("--path-version", choices=("v1", "v2"), default="v1", help="field paths in the URNs (default v1, dotted)")
    for q in (q_fields, q_mappings, q_operations, q_directives):
        q.add_argument("--start", default=None, help="window start, inclusive: ISO 8601 (UTC unless an offset is given) or epoch seconds")
        q.add_argument("--end", default=None, help="window end, exclusive; runs are selected by their end time")
    for q in (q_mappings, q_operations):
        q.add_argument("--direction", choices=("backward", "forward", "both"), default="backward")
    q_mappings.add_argument("--levels", type=int, default=1, help="how many dataset hops (default 1)")
    q_fields.add_argument("--prefix", default=None, help="only fields starting with this (case-insensitive)")
    q_fields.add_argument("--include-current", action="store_true", help="also the current schema's fields without lineage")
    for q in (q_fields, q_mappings, q_operations, q_dataset, q_datahub, q_directives):
        q.add_argument("--table", action="store_true", help="print a readable table instead of JSON")
    for q in (q_lineage, q_column, q_fields, q_mappings, q_operations, q_dataset, q_datahub, q_directives, q_history, q_impact):
        q.add_argument("--warehouse", default=None, help="default LINEAGE_WAREHOUSE or data/warehouse")

    p_graph = sub.add_parser("graph", help="draw the job/dataset graph, or the column graph, around a node (Graphviz)")
    p_graph.add_argument("node", help="job:NS:NAME or dataset:NS:NAME; with --columns also datasetField:NS:NAME:FIELD[#VERSION]")
    p_graph.add_argument("-o", "--output", required=True, help="the file to write: .svg, .png or .html (a page with the SVG and the node list)")
    p_graph.add_argument("--columns", action="store_true", help="the column graph (fields grouped by dataset) instead of the job graph")
    p_graph.add_argument("--depth", type=int, default=20, help="job hops, or field hops with --columns (default 20)")
    p_graph.add_argument("--with-downstream", action="store_true", help="with --columns: downstream field lineage too")
    p_graph.add_argument("--max-nodes", type=int, default=300, help="draw at most this many nodes, the nearest (default 300)")
    p_graph.add_argument("--warehouse", default=None, help="default LINEAGE_WAREHOUSE or data/warehouse")

    p_rules = sub.add_parser(
        "partition-rules", help="the partition rules in force (LINEAGE_PARTITION_RULES, else the defaults), as JSON",
    )
    p_rules.add_argument("--fold", nargs=2, action="append", metavar=("NAMESPACE", "NAME"), default=[],
                         help="also show what the rules make of a dataset name (repeatable)")

    p_tag = sub.add_parser("tag", help="set, remove or list column tags (set/remove drop a DatasetEvent with the tags facet)")
    t_sub = p_tag.add_subparsers(dest="tag_command", required=True)
    t_set = t_sub.add_parser("set", help="tag a field (or a dataset): `tag set datasetField:NS:NAME:FIELD pii=true`")
    t_set.add_argument("items", nargs="+", metavar="[NODE] KEY=VALUE", help="the node (or --namespace/--name/--field) and KEY=VALUE")
    t_remove = t_sub.add_parser("remove", help="remove a tag from a field (or a dataset)")
    t_remove.add_argument("items", nargs="+", metavar="[NODE] KEY", help="the node (or --namespace/--name/--field) and the key")
    for t in (t_set, t_remove):
        t.add_argument("--namespace", default=None)
        t.add_argument("--name", default=None)
        t.add_argument("--field", default=None)
        t.add_argument("--source", default="lineage-assets", help="the tag's source (default lineage-assets)")
        t.add_argument("--drop-dir", default=None, help="default LINEAGE_DROP_DIR or data/drops")
    t_list = t_sub.add_parser("list", help="fields carrying a tag (with --propagate, those derived from one through DIRECT edges)")
    t_list.add_argument("key")
    t_list.add_argument("--value", default=None)
    t_list.add_argument("--propagate", action="store_true", help="follow DIRECT column edges downstream, stopping at masking")
    t_list.add_argument("--table", action="store_true", help="print a readable table instead of JSON")
    for t in (t_set, t_remove, t_list):
        t.add_argument("--warehouse", default=None, help="default LINEAGE_WAREHOUSE or data/warehouse")

    p_serve = sub.add_parser("serve", help="the OpenLineage HTTP endpoint: POST /api/v1/lineage lands events in the drop folder")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=5000, help="default 5000; 0 takes a free port (printed)")
    p_serve.add_argument("--drop-dir", default=None, help="default LINEAGE_DROP_DIR or data/drops; files go to its http/ folder")
    p_serve.add_argument("--api-key", default=None, help="require `Authorization: Bearer KEY` (default LINEAGE_API_KEY; none: no auth)")
    p_serve.add_argument("--max-body-bytes", type=int, default=16 * 1024 * 1024, help="request size limit, also after gunzip (413 beyond)")
    p_serve.add_argument("--batch-max-events", type=int, default=1000, help="events per file at most (a larger request is one file)")
    p_serve.add_argument("--batch-max-wait-ms", type=float, default=10.0, help="how long a file stays open for more requests")
    p_serve.add_argument("--warehouse", default=None, help="answer the read routes (GET /api/v1/lineage, ...) from it "
                         "(default LINEAGE_WAREHOUSE or data/warehouse)")
    p_serve.add_argument("--log-level", default="info")
    p_serve.add_argument("--access-log", action="store_true")

    args = parser.parse_args(argv)
    if args.command == "partition-rules":
        return _partition_rules(args.fold)
    env = Folders.from_env()  # the commands that read need no more; ingest and demo check the rest
    if args.command == "serve":
        from lineage_assets.http.server import serve

        drop_dir = os.path.abspath(args.drop_dir or env.drop_dir)
        if _a_file("drop folder", drop_dir):
            return 2
        api_key = args.api_key if args.api_key is not None else os.environ.get("LINEAGE_API_KEY")
        try:
            serve(args.host, args.port, drop_dir, api_key or None, max_body_bytes=args.max_body_bytes,
                  batch_max_events=args.batch_max_events, batch_max_wait_ms=args.batch_max_wait_ms,
                  log_level=args.log_level, access_log=args.access_log, warehouse=os.path.abspath(args.warehouse or env.warehouse))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command == "query":
        return _query(args, args.warehouse or env.warehouse)
    if args.command == "tag":
        return _tag(args, os.path.abspath(args.warehouse or env.warehouse), env)
    if args.command == "graph":
        return _graph(args, args.warehouse or env.warehouse)
    if args.command == "ingest":
        warehouse = os.path.abspath(args.warehouse)
        try:
            settings = LineageSettings(
                drop_dir=os.path.abspath(args.drop_dir), warehouse=warehouse,
                start_date=args.start_date or start_date_for(warehouse),
            )
            parse_start_date(settings.start_date, "--start-date" if args.start_date else "LINEAGE_START_DATE")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return _ingest(settings)
    if args.command == "demo":
        from lineage_assets.demo.generator import generate_demo

        began = time.monotonic()
        data = Path(args.data_dir)
        first_day = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=args.days)
        start = os.environ.get("LINEAGE_START_DATE") or first_day.isoformat()
        try:
            parse_start_date(start)
            settings = LineageSettings(drop_dir=str(data / "drops"), warehouse=str(data / "warehouse"), start_date=start)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        data.mkdir(parents=True, exist_ok=True)
        (data / "start_date").write_text(start + "\n")  # `make dev` reads it: partitions start at the demo's data
        written = generate_demo(settings.drop_dir, first_day=first_day, days=args.days)
        print(f"demo: wrote {len(written)} drop files under {settings.drop_dir}", flush=True)
        from lineage_assets.runner import run_recipe_asset

        with _instance() as instance:
            if not run_recipe_asset(settings, instance, log=lambda m: print(m, flush=True)):
                print("error: the recipe asset failed (see the Dagster UI for its logs)", file=sys.stderr)
                return 1
        code = _ingest(settings)
        views = Path(settings.warehouse) / "duckdb_views.sql"
        print(f"\nsample query (DuckDB over the committed Parquet files: `.read {views}` defines one view per table):")
        import duckdb

        con = duckdb.connect()
        con.execute(views.read_text())
        print(con.sql("select event_date, job_name, count(*) as events from events where event_kind = 'RUN' group by all order by 1, 2"))
        from lineage_assets import LineageQuery, NodeNotFound

        start = "job:spark-prod:orders_enrich"
        print(f"\nsample lineage query: LineageQuery(warehouse).lineage({start!r}, depth=1)")
        try:
            with LineageQuery(settings.warehouse) as query:
                graph = query.lineage(start, depth=1)
            for node in graph.graph:
                ins = ", ".join(e.origin for e in node.inEdges) or "-"
                print(f"  {node.type:<8} {node.id}   <- {ins}")
        except NodeNotFound as exc:
            print(f"  (no answer: {exc})")
        from lineage_assets.query.render import as_tree

        field = "datasetField:postgres://warehouse.example.com:5432:reporting.revenue_by_country:revenue"
        print(f"\nsample column query: lineage-assets query column-lineage '{field}' --tree")
        try:
            with LineageQuery(settings.warehouse) as query:
                print("  " + as_tree(query.column_lineage(field)).replace("\n", "\n  "))
        except NodeNotFound as exc:
            print(f"  (no answer: {exc})")
        print(f"\ndemo finished in {time.monotonic() - began:.0f}s")
        print("next: `make dev` and open http://127.0.0.1:3000 to see these runs, partitions and checks")
        return code
    if args.command in ("files", "summary"):
        return _read_warehouse(args, args.warehouse or env.warehouse)
    return 2


def _read_warehouse(args, warehouse: str) -> int:
    """`files` and `summary`: 2 for a bad argument or no warehouse folder, 4 when its files cannot
    be read (as `query`)."""
    import duckdb

    from lineage_assets.warehouse import commits
    from lineage_assets.warehouse.summary import format_summary

    if _no_warehouse(warehouse):
        return 2
    try:
        text = "\n".join(commits.committed_files(warehouse, args.table)) if args.command == "files" else format_summary(warehouse)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, duckdb.Error) as exc:
        print(f"error: warehouse {warehouse} could not be read: {exc}", file=sys.stderr)
        return 4
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
