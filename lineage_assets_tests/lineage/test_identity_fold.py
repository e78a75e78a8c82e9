"""Dataset identity in the fold and the snapshot (DESIGN.md section 10): aliases from the
symlinks facet and partitions folded into their dataset.

One stream of independent scenarios (each in its own namespaces) is folded once as one range, and
again with its later days first and its first day late: both give the same tables. Every fold of
the module runs with RULES, a configured partition rule before the defaults.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from lineage_assets.identity.partitions import ENV as RULES_ENV
from lineage_assets.identity.partitions import fold_name, rules_from_spec
from lineage_assets.ids import content_uuid
from lineage_assets.pipeline.fold import run_fold
from lineage_assets.pipeline.snapshot import publish_current_graph
from lineage_assets.query.lineage_query import LineageQuery
from lineage_assets_tests.support import commit_events, ds, fold_stream, run_event, run_uuid

SCHEDULE_SECONDS = 180  # measured (--durations); conftest runs long files first

D1, D2, D3, D4 = "2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"
HIVE = "hive://metastore:9083"
ORDERS = "postgres://orders:5432"
# A configured partition rule (LINEAGE_PARTITION_RULES' form): a `.runN` suffix is a partition
RULES_SPEC = {"rules": [{"name": "run_suffix", "pattern": r"^(.*)\.(run\d+)$", "scope": "any", "description": "a .runN suffix"}]}
RULES = rules_from_spec(RULES_SPEC)


def t(day: str, hhmm: str) -> str:
    return f"{day}T{hhmm}:00Z"


def symlinked(namespace: str, name: str, *identifiers: tuple[str, str, str]) -> dict:
    """A dataset reference whose symlinks facet names other identifiers (namespace, name, type)."""
    return ds(name, namespace, symlinks={
        "_producer": "p", "_schemaURL": "s",
        "identifiers": [{"namespace": n, "name": m, "type": k} for n, m, k in identifiers],
    })


def version(namespace: str, name: str, run: str) -> str:
    return content_uuid({"dataset": [namespace, name], "run_id": run_uuid(run)})


STREAM = [
    # A. the Spark listener writes a path and names its table; Trino reads the table
    run_event(t(D1, "01:00"), "COMPLETE", "a-write", "a_spark", ["a_src"], [symlinked("file", "/wh/a", (HIVE, "db.a", "TABLE"))]),
    run_event(t(D1, "02:00"), "START", "a-read", "a_trino", [ds("db.a", HIVE)]),
    run_event(t(D1, "02:10"), "COMPLETE", "a-read", "a_trino", [ds("db.a", HIVE)], [ds("a_out")]),
    # C. a chain: c1 -> c2 (stated on c1), c2 -> c3 (stated on c2); a reader of c1 after both reads c3
    run_event(t(D1, "03:00"), "COMPLETE", "c-1", "c_one", [], [symlinked("c", "c1", ("c", "c2", "TABLE"))]),
    run_event(t(D1, "03:10"), "COMPLETE", "c-2", "c_two", [], [symlinked("c", "c2", ("c", "c3", "TABLE"))]),
    run_event(t(D1, "03:20"), "COMPLETE", "c-read", "c_reader", [ds("c1", "c")], [ds("c_out", "c")]),
    # D. two producers disagree on the path's table: the later statement wins from its time on
    run_event(t(D1, "04:00"), "COMPLETE", "d-1", "d_one", [symlinked("file", "/wh/d", (HIVE, "db.d_x", "TABLE"))], [ds("d_o1", "d")]),
    run_event(t(D1, "04:10"), "COMPLETE", "d-early", "d_reader", [ds("/wh/d", "file")], [ds("d_o2", "d")]),
    run_event(t(D2, "04:00"), "COMPLETE", "d-2", "d_two", [symlinked("file", "/wh/d", (HIVE, "db.d_y", "TABLE"))], [ds("d_o3", "d")]),
    run_event(t(D2, "04:10"), "COMPLETE", "d-late", "d_reader", [ds("/wh/d", "file")], [ds("d_o2", "d")]),
    # E. the table has its own history before a path writer is known to be it
    run_event(t(D1, "05:00"), "COMPLETE", "e-table", "e_table_writer", [], [ds("db.e", HIVE)]),
    run_event(t(D1, "05:10"), "COMPLETE", "e-read1", "e_reader", [ds("db.e", HIVE)], [ds("e_out", "e")]),
    run_event(t(D1, "06:00"), "COMPLETE", "e-path", "e_path_writer", [], [symlinked("file", "/wh/e", (HIVE, "db.e", "TABLE"))]),
    run_event(t(D1, "06:10"), "COMPLETE", "e-read2", "e_reader", [ds("db.e", HIVE)], [ds("e_out", "e")]),
    # F. a daily job writes a new partition each day; a reader reads one partition; a full rewrite
    run_event(t(D1, "07:00"), "COMPLETE", "f-d1", "f_daily", [ds("f_src", "f")], [ds("events/date=2024-05-01/", "s3://lake")]),
    run_event(t(D2, "07:00"), "COMPLETE", "f-d2", "f_daily", [ds("f_src", "f")], [ds("events/date=2024-05-02/", "s3://lake")]),
    run_event(t(D2, "07:30"), "COMPLETE", "f-read", "f_reader", [ds("events/date=2024-05-01/", "s3://lake")], [ds("f_out", "f")]),
    run_event(t(D2, "08:00"), "COMPLETE", "f-backfill", "f_backfill", [],
              [ds("events/date=2024-04-01/", "s3://lake"), ds("events/date=2024-04-02/", "s3://lake")]),
    run_event(t(D3, "07:00"), "COMPLETE", "f-full", "f_full", [], [ds("events", "s3://lake")]),
    run_event(t(D3, "07:30"), "COMPLETE", "f-read2", "f_reader", [ds("events/date=2024-05-01/", "s3://lake")], [ds("f_out", "f")]),
    # H. a path writer and a table reader, one dataset once a later statement says so (LATE_ALIAS, on D4);
    # both state column lineage (y <- h.late_src.x, an input the writer does not declare; v <- y) and schemas
    run_event(t(D1, "01:00"), "COMPLETE", "old-write", "old_writer", [], [ds(
        "/wh/late", "file", schema={"fields": [{"name": "y", "type": "int"}]},
        columnLineage={"fields": {"y": {"inputFields": [
            {"namespace": "h", "name": "late_src", "field": "x", "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}]}]}}},
    )]),
    run_event(t(D1, "02:00"), "COMPLETE", "table-read", "table_reader", [ds("db.late", HIVE)], [ds(
        "late_out", schema={"fields": [{"name": "v", "type": "int"}]},
        columnLineage={"fields": {"v": {"inputFields": [
            {"namespace": HIVE, "name": "db.late", "field": "y", "transformations": [{"type": "DIRECT", "subtype": "TRANSFORMATION"}]}]}}},
    )]),
    # G. a table whose name only looks like a partition is its own dataset
    run_event(t(D1, "09:00"), "COMPLETE", "g-1", "g_writer", [], [ds("public.sales_20240101", "postgres://db:5432"), ds("public.sales", "postgres://db:5432")]),
    # P. a loader writes a partition of a table each day, named by the configured rule (RULES); a reader reads one
    run_event(t(D1, "10:00"), "COMPLETE", "p-7", "p_loader", [], [ds("public.orders.run7", ORDERS)]),
    run_event(t(D2, "10:00"), "COMPLETE", "p-8", "p_loader", [], [ds("public.orders.run8", ORDERS)]),
    run_event(t(D2, "10:30"), "COMPLETE", "p-read", "p_reader", [ds("public.orders.run7", ORDERS)], [ds("p_out", "p")]),
]


@pytest.fixture(scope="module")
def folded(spark):
    return fold_stream(spark, STREAM + TEMPORARY, rules=RULES)


def _run(folded, label):
    return next(r for r in folded.runs if r["run_id"] == run_uuid(label))


def _lineage(folded, label):
    return next(r for r in folded.run_lineage if r["run_id"] == run_uuid(label))


def _read(folded, label) -> dict[tuple[str, str], str]:
    return {(v["namespace"], v["name"]): v["version_id"] for v in _lineage(folded, label)["input_versions"]}


def test_a_reader_of_the_table_reads_the_version_the_path_writer_produced(folded):
    assert _read(folded, "a-read") == {(HIVE, "db.a"): version(HIVE, "db.a", "a-write")}
    [written] = [v for v in folded.dataset_versions if v["run_id"] == run_uuid("a-write")]
    assert (written["namespace"], written["name"]) == (HIVE, "db.a")
    [output] = _run(folded, "a-write")["outputs"]
    assert output["reported"] == [{"namespace": "file", "name": "/wh/a"}] and output["partitions"] == []
    aliases = {(a["alias_namespace"], a["alias_name"]): a for a in folded.dataset_aliases}
    learnt = aliases[("file", "/wh/a")]
    assert (learnt["namespace"], learnt["name"], learnt["learnt_at"].isoformat()[:19]) == (HIVE, "db.a", "2024-05-01T01:00:00")


def test_an_alias_chain_resolves_to_its_end(folded):
    assert _read(folded, "c-read") == {("c", "c3"): version("c", "c3", "c-2")}


def test_two_producers_disagreeing_give_the_later_statement_from_its_time(folded):
    assert set(_read(folded, "d-early")) == {(HIVE, "db.d_x")}
    assert set(_read(folded, "d-late")) == {(HIVE, "db.d_y")}
    said = sorted((a["learnt_at"].isoformat()[:19], a["name"]) for a in folded.dataset_aliases if a["alias_name"] == "/wh/d")
    assert said == [("2024-05-01T04:00:00", "db.d_x"), ("2024-05-02T04:00:00", "db.d_y")]


def test_an_alias_of_a_dataset_with_its_own_history_continues_that_history(folded):
    assert _read(folded, "e-read1") == {(HIVE, "db.e"): version(HIVE, "db.e", "e-table")}
    assert _read(folded, "e-read2") == {(HIVE, "db.e"): version(HIVE, "db.e", "e-path")}


def test_a_daily_partition_writer_keeps_one_job_version_and_one_dataset(folded):
    versions = [v for v in folded.job_versions if v["job_name"] == "f_daily"]
    assert len(versions) == 1 and versions[0]["outputs"] == [{"namespace": "s3://lake", "name": "events"}]
    written = {v["run_id"]: v for v in folded.dataset_versions if v["namespace"] == "s3://lake"}
    assert written[run_uuid("f-d1")]["name"] == "events" and written[run_uuid("f-d1")]["partitions"] == ["date=2024-05-01"]
    assert written[run_uuid("f-d2")]["partitions"] == ["date=2024-05-02"]
    assert written[run_uuid("f-backfill")]["partitions"] == ["date=2024-04-01", "date=2024-04-02"]  # one version, both partitions
    assert written[run_uuid("f-full")]["partitions"] == []  # a write of the whole dataset


def test_a_reader_of_a_partition_reads_the_dataset_and_keeps_the_partition(folded):
    [read] = _run(folded, "f-read")["inputs"]
    assert (read["namespace"], read["name"], read["partitions"]) == ("s3://lake", "events", ["date=2024-05-01"])
    assert read["reported"] == [{"namespace": "s3://lake", "name": "events/date=2024-05-01/"}]
    assert _read(folded, "f-read") == {("s3://lake", "events"): version("s3://lake", "events", "f-d2")}  # the latest write before it
    assert _read(folded, "f-read2") == {("s3://lake", "events"): version("s3://lake", "events", "f-full")}


def test_a_table_that_only_looks_like_a_partition_is_its_own_dataset(folded):
    names = {v["name"] for v in folded.dataset_versions if v["run_id"] == run_uuid("g-1")}
    assert names == {"public.sales_20240101", "public.sales"}


def test_a_configured_partition_rule_folds_partitions_into_their_dataset(folded, temporary_warehouse, monkeypatch, tmp_path):
    """DESIGN.md section 10: the partition rules are configurable. A fold given a rule of its own
    (run_fold's `rules`) folds the names it matches into their dataset and keeps the partition on
    the dataset version; the query helper under the same rule (LINEAGE_PARTITION_RULES) answers a
    partition's name with its dataset. The default rules leave these names alone."""
    assert fold_name(ORDERS, "public.orders.run7") == ("public.orders.run7", None)
    [loader] = [v for v in folded.job_versions if v["job_name"] == "p_loader"]
    assert loader["outputs"] == [{"namespace": ORDERS, "name": "public.orders"}]
    written = {v["run_id"]: v for v in folded.dataset_versions if v["namespace"] == ORDERS}
    assert {(w["name"], tuple(w["partitions"])) for w in written.values()} == {("public.orders", ("run7",)), ("public.orders", ("run8",))}
    assert written[run_uuid("p-7")]["partitions"] == ["run7"] and written[run_uuid("p-8")]["partitions"] == ["run8"]
    [read] = _run(folded, "p-read")["inputs"]
    assert (read["namespace"], read["name"], read["partitions"]) == (ORDERS, "public.orders", ["run7"])
    assert read["reported"] == [{"namespace": ORDERS, "name": "public.orders.run7"}]
    assert _read(folded, "p-read") == {(ORDERS, "public.orders"): version(ORDERS, "public.orders", "p-8")}
    (tmp_path / "rules.json").write_text(json.dumps(RULES_SPEC))
    monkeypatch.setenv(RULES_ENV, str(tmp_path / "rules.json"))
    with LineageQuery(temporary_warehouse) as query:
        graph = query.lineage(f"dataset:{ORDERS}:public.orders.run9", depth=1)  # a partition nobody wrote yet
        assert graph.ids == {f"dataset:{ORDERS}:public.orders", "job:ns:p_loader", "job:ns:p_reader", "dataset:p:p_out"}


def _sorted(rows: list[dict]) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in rows)


def test_the_current_graph_names_canonical_datasets_and_lists_their_aliases(temporary_warehouse):
    with LineageQuery(temporary_warehouse) as query:
        by_path = query.lineage("dataset:file:/wh/a", depth=1)
        assert by_path == query.lineage(f"dataset:{HIVE}:db.a", depth=1)  # any alias answers with the canonical node
        node = by_path.node(f"dataset:{HIVE}:db.a")
        assert node.data["aliases"] == [{"namespace": "file", "name": "/wh/a"}]
        assert {e.origin for e in node.inEdges} == {"job:ns:a_spark"} and {e.destination for e in node.outEdges} == {"job:ns:a_trino"}
        # a partition's name answers with its dataset; the daily job has one current output edge
        daily = query.lineage("dataset:s3://lake:events/date=2024-05-02/", depth=1)
        assert "dataset:s3://lake:events" in daily.ids
        assert [e.destination for e in daily.node("job:ns:f_daily").outEdges] == ["dataset:s3://lake:events"]
        assert query.lineage("dataset:file:/wh/d", depth=1).node(f"dataset:{HIVE}:db.d_y").data["aliases"] == [
            {"namespace": "file", "name": "/wh/d"}
        ]


def test_an_alias_learnt_later_re_points_earlier_lineage_on_the_next_snapshot(spark, temporary_warehouse, day_four):
    """The path writer and the table reader are two components until a later event says the
    path is the table (LATE_ALIAS: the path writer's first day is in the module's stream, the
    statement lands on D4); then the next snapshot joins them, and history keeps what it wrote."""
    with LineageQuery(temporary_warehouse) as query:
        assert query.lineage("job:ns:old_writer", depth=5).ids == {"job:ns:old_writer", "dataset:file:/wh/late"}
    with LineageQuery(day_four) as query:
        component = query.lineage("job:ns:old_writer", depth=5).ids
    assert component == {
        "job:ns:old_writer", "job:ns:new_writer", "job:ns:table_reader", f"dataset:{HIVE}:db.late", "dataset:ds:late_out",
    }
    from lineage_assets.warehouse import commits

    history = commits.read_table(spark, day_four, "dataset_versions").collect()
    assert {(r["namespace"], r["name"]) for r in history if r["run_id"] == run_uuid("old-write")} == {("file", "/wh/late")}


def _latest(warehouse: str, table: str, columns: str, where: str = "true") -> list[tuple]:
    """Rows of a table as the warehouse's latest commit holds it (DuckDB, no Spark)."""
    from lineage_assets.warehouse import commits

    relation = commits.duckdb_relation_sql(commits.latest(warehouse), table)
    return duckdb.sql(f"select {columns} from ({relation}) where {where} order by all").fetchall()


def test_an_alias_learnt_later_re_points_earlier_column_lineage_and_fields_on_the_next_snapshot(temporary_warehouse, day_four):
    """The same late statement (LATE_ALIAS) re-points the path writer's column lineage and fields:
    the snapshot after it names the table in current_column_lineage and current_dataset_fields,
    so the reader's field reaches the writer's input; the history tables keep the path as written."""
    edges = "output_namespace, output_name, output_field, input_namespace, input_name, input_field"
    writer = "job_name = 'old_writer'"
    assert _latest(temporary_warehouse, "current_column_lineage", edges, writer) == [("file", "/wh/late", "y", "h", "late_src", "x")]
    assert _latest(temporary_warehouse, "current_dataset_fields", "namespace, name, field_path", "name like '%late'") == [("file", "/wh/late", "y")]
    v = "datasetField:ds:late_out:v"
    with LineageQuery(temporary_warehouse) as query:
        assert query.column_lineage(v, depth=5).ids == {v, f"datasetField:{HIVE}:db.late:y"}
    assert _latest(day_four, "current_column_lineage", edges, writer) == [(HIVE, "db.late", "y", "h", "late_src", "x")]
    assert _latest(day_four, "current_column_lineage", edges, "job_name = 'table_reader'") == [("ds", "late_out", "v", HIVE, "db.late", "y")]
    assert _latest(day_four, "current_dataset_fields", "namespace, name, field_path", "name like '%late'") == [(HIVE, "db.late", "y")]
    with LineageQuery(day_four) as query:
        assert query.column_lineage(v, depth=5).ids == {v, f"datasetField:{HIVE}:db.late:y", "datasetField:h:late_src:x"}
    # history keeps the names as written
    assert _latest(day_four, "column_lineage", edges, f"run_id = '{run_uuid('old-write')}'") == [("file", "/wh/late", "y", "h", "late_src", "x")]
    assert _latest(day_four, "dataset_fields", "namespace, name, field_path", "name like '%late'") == [("file", "/wh/late", "y")]


# ---------------------------------------------------------------------------------- temporary datasets

PARENT_RUN = run_uuid("app-run")


def child_of(parent: str) -> dict:
    return {"parent": {"_producer": "p", "_schemaURL": "s", "run": {"runId": parent}, "job": {"namespace": "ns", "name": "app"}}}


def lineage_of(namespace: str, name: str, fields: dict[str, list[tuple[str, str, str, str]]]) -> dict:
    """A dataset with a columnLineage facet: output field -> [(input namespace, name, field, subtype)]."""
    return ds(name, namespace, columnLineage={"_producer": "p", "_schemaURL": "s", "fields": {
        out: {"inputFields": [
            {"namespace": n, "name": m, "field": f, "transformations": [{"type": "DIRECT", "subtype": sub}]} for n, m, f, sub in ins
        ]} for out, ins in fields.items()
    }})


TEMPORARY = [
    # one job that writes and reads its own staging dataset in one run
    run_event(t(D1, "01:00"), "COMPLETE", "s-1", "stager", [ds("s_src", "t"), ds("staging", "t")], [ds("staging", "t"), ds("s_final", "t")]),
    run_event(t(D1, "02:00"), "COMPLETE", "s-read", "s_reader", [ds("s_final", "t")], [ds("s_report", "t")]),
    # two children of one parent run: a writes tmp (y <- src.x), b reads it (z <- tmp.y)
    run_event(t(D1, "03:00"), "COMPLETE", "k-a", "app.a", [ds("k_src", "t")],
              [lineage_of("t", "k_tmp", {"y": [("t", "k_src", "x", "IDENTITY")]})], run_facets=child_of(PARENT_RUN)),
    run_event(t(D1, "03:10"), "COMPLETE", "k-b", "app.b", [ds("k_tmp", "t")],
              [lineage_of("t", "k_final", {"z": [("t", "k_tmp", "y", "TRANSFORMATION")]})], run_facets=child_of(PARENT_RUN)),
    # a cycle through a temporary dataset: c1 writes and reads c_tmp and writes c_d; c2 reads c_d and writes c_e; c1 reads c_e
    run_event(t(D1, "04:00"), "COMPLETE", "cy-1", "cyc1", [ds("c_tmp", "t"), ds("c_e", "t")], [ds("c_tmp", "t"), ds("c_d", "t")]),
    run_event(t(D1, "04:10"), "COMPLETE", "cy-2", "cyc2", [ds("c_d", "t")], [ds("c_e", "t")]),
    # children of two different parent runs share a dataset: one writes it, the other reads it
    run_event(t(D1, "05:00"), "COMPLETE", "sp-a", "split.a", [ds("sp_src", "t")], [ds("sp_shared", "t")],
              run_facets=child_of(run_uuid("app-run-1"))),
    run_event(t(D1, "05:10"), "COMPLETE", "sp-b", "split.b", [ds("sp_shared", "t")], [ds("sp_final", "t")],
              run_facets=child_of(run_uuid("app-run-2"))),
]
OUTSIDE = [  # later, a job outside the parent run reads the children's tmp
    run_event(t(D4, "05:00"), "COMPLETE", "k-out", "outsider", [ds("k_tmp", "t")], [ds("o_final", "t")]),
]
LATE_ALIAS = [  # later, a new writer of the path says it is the table
    run_event(t(D4, "01:00"), "COMPLETE", "new-write", "new_writer", [], [symlinked("file", "/wh/late", (HIVE, "db.late", "TABLE"))]),
]


@pytest.fixture(scope="module")
def temporary_warehouse(spark, folded, tmp_path_factory):
    """The module's fold (its stream holds the temporary scenario), published."""
    from lineage_assets_tests.support import publish_current

    warehouse = str(tmp_path_factory.mktemp("published"))
    publish_current(spark, folded.state, warehouse, folded)
    return warehouse


def test_a_dataset_written_and_read_only_inside_one_job_is_temporary_and_hidden(temporary_warehouse):
    with LineageQuery(temporary_warehouse) as query:
        shown = query.lineage("job:ns:stager", depth=2)
        assert "dataset:t:staging" not in shown.ids and {"dataset:t:s_final", "job:ns:s_reader"} <= shown.ids
        assert "bridged" not in shown.node("job:ns:stager").data  # a job reading what it wrote gets no edge to itself
        full = query.lineage("job:ns:stager", depth=2, include_temporary=True)
        assert full.node("dataset:t:staging").data["temporary"] is True
        assert full.node("dataset:t:s_final").data["temporary"] is False
        assert query.lineage("dataset:t:staging", depth=0).node("dataset:t:staging").data["temporary"] is True  # asked for: shown


def test_children_of_one_parent_bridge_their_temporary_dataset_in_jobs_and_columns(temporary_warehouse):
    with LineageQuery(temporary_warehouse) as query:
        graph = query.lineage("job:ns:app.a", depth=1)
        assert "dataset:t:k_tmp" not in graph.ids
        assert [e.destination for e in graph.node("job:ns:app.a").outEdges] == ["job:ns:app.b"]
        assert graph.node("job:ns:app.a").data["bridged"] == [{"to": "job:ns:app.b", "through": ["dataset:t:k_tmp"]}]
        assert graph.node("job:ns:app.a").data["temporaryDatasets"] == ["dataset:t:k_tmp"]  # current_jobs.temporary_datasets
        assert graph.node("job:ns:app.a").data["temporaryDatasets"] == graph.node("job:ns:app.b").data["temporaryDatasets"]
        z = "datasetField:t:k_final:z"
        for depth in (1, 20):  # the hidden hop costs nothing
            answer = query.column_lineage(z, depth=depth)
            assert answer.ids == {z, "datasetField:t:k_src:x"}
            [x] = answer.node(z).data["inputFields"]
            assert (x["dataset"], x["field"], x["through"]) == ("k_src", "x", ["datasetField:t:k_tmp:y"])
            assert sorted(t["subtype"] for t in x["transformations"]) == ["IDENTITY", "TRANSFORMATION"]  # both hops
        shown = query.column_lineage(z, include_temporary=True)
        assert "datasetField:t:k_tmp:y" in shown.ids
        down = query.column_lineage("datasetField:t:k_src:x", depth=1, with_downstream=True)
        assert z in down.ids and "datasetField:t:k_tmp:y" not in down.ids


def test_children_of_different_parent_runs_sharing_a_dataset_do_not_make_it_temporary(temporary_warehouse):
    """DESIGN.md section 10: only the children of ONE parent run make a dataset they share
    temporary; a writer and a reader whose latest runs have different parents see an ordinary one."""
    with LineageQuery(temporary_warehouse) as query:
        graph = query.lineage("job:ns:split.a", depth=1)
        assert graph.node("dataset:t:sp_shared").data["temporary"] is False
        assert [e.destination for e in graph.node("job:ns:split.a").outEdges] == ["dataset:t:sp_shared"]
        assert "bridged" not in graph.node("job:ns:split.a").data
        assert graph.node("job:ns:split.a").data["temporaryDatasets"] == graph.node("job:ns:split.b").data["temporaryDatasets"] == []


def test_a_temporary_dataset_inside_a_cycle(temporary_warehouse):
    with LineageQuery(temporary_warehouse) as query:
        graph = query.lineage("job:ns:cyc1", depth=3)
        assert graph.ids == {"job:ns:cyc1", "job:ns:cyc2", "dataset:t:c_d", "dataset:t:c_e"}
        full = query.lineage("job:ns:cyc1", depth=3, include_temporary=True)
        assert full.node("dataset:t:c_tmp").data["temporary"] is True
        assert {n.data["componentId"] for n in full.graph} == {min(full.ids)}


@pytest.fixture(scope="module")
def day_four(spark, temporary_warehouse, tmp_path_factory) -> str:
    """A copy of the module's published warehouse with D4's events (OUTSIDE, LATE_ALIAS) folded
    and published."""
    import datetime as dt
    import shutil

    warehouse = str(tmp_path_factory.mktemp("day_four") / "wh")
    shutil.copytree(temporary_warehouse, warehouse)
    commit_events(spark, warehouse, OUTSIDE + LATE_ALIAS)
    day = dt.date.fromisoformat(D4)
    assert run_fold(spark, warehouse, day, day, log=lambda _m: None, rules=RULES).passed
    assert publish_current_graph(spark, warehouse, log=lambda _m: None).passed
    return warehouse


def test_an_outside_reader_makes_it_ordinary_at_the_next_snapshot(day_four):
    with LineageQuery(day_four) as query:
        graph = query.lineage("job:ns:app.a", depth=1)
        assert graph.node("dataset:t:k_tmp").data["temporary"] is False
        assert "dataset:t:k_tmp" in graph.ids and "bridged" not in graph.node("job:ns:app.a").data


def test_days_arriving_out_of_order_give_the_same_canonical_names_and_tables(spark, folded, tmp_path):
    """The later days land and are folded first; then the first day's events arrive late and are
    folded from that day forward (the alias statements carried in state are recomputed too)."""
    import datetime as dt

    from lineage_assets.warehouse import commits

    warehouse = str(tmp_path)
    stream = STREAM + TEMPORARY
    late, early = [e for e in stream if e["eventTime"].startswith(D1)], [e for e in stream if not e["eventTime"].startswith(D1)]
    commit_events(spark, warehouse, early)
    assert run_fold(spark, warehouse, dt.date.fromisoformat(D2), dt.date.fromisoformat(D3), log=lambda _m: None, rules=RULES).passed
    commit_events(spark, warehouse, late)
    report = run_fold(spark, warehouse, dt.date.fromisoformat(D1), dt.date.fromisoformat(D1), log=lambda _m: None, rules=RULES)
    assert report.passed and str(report.last) == D3  # extended to the last day folded
    for table in ("runs", "job_versions", "dataset_versions", "run_lineage", "dataset_aliases"):
        rows = [r.asDict(recursive=True) for r in commits.read_table(spark, warehouse, table).collect()]
        assert _sorted(rows) == _sorted(getattr(folded, table)), table


def test_the_command_line_bridges_unless_asked_to_show_temporary_datasets(temporary_warehouse, capsys):
    import json

    from lineage_assets.cli import main

    for flag, shown in (([], False), (["--include-temporary"], True)):
        assert main(["query", "lineage", "job:ns:app.a", "--depth", "1", "--warehouse", temporary_warehouse, *flag]) == 0
        ids = {node["id"] for node in json.loads(capsys.readouterr().out)["graph"]}
        assert ("dataset:t:k_tmp" in ids) is shown and "job:ns:app.b" in ids
        assert main(["query", "column-lineage", "datasetField:t:k_final:z", "--warehouse", temporary_warehouse, *flag]) == 0
        ids = {node["id"] for node in json.loads(capsys.readouterr().out)["graph"]}
        assert ("datasetField:t:k_tmp:y" in ids) is shown and "datasetField:t:k_src:x" in ids
