"""`LineageQueryResource`, the check that uses it, reads during writes, and the query command.

These use a synthetic snapshot written with pyarrow (lineage_assets.query.synthetic): no fold.
"""

from __future__ import annotations

import json
import threading

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lineage_assets import LineageQuery
from lineage_assets.cli import main
from lineage_assets.definitions import build_definitions
from lineage_assets.defs.lineage import COLUMN_FIELDS_CHECK
from lineage_assets.defs.resources import LineageQueryResource
from lineage_assets.query.render import as_tree
from lineage_assets.query.synthetic import NS, build
from lineage_assets.settings import LineageSettings
from lineage_assets.warehouse import commits, tables

FIELD = f"datasetField:{NS}:p1.table4:f2"


@pytest.fixture()
def warehouse(tmp_path):
    build(str(tmp_path / "wh"), jobs=60, chain=6, fields=4, fan_in=2, seed=3)
    return str(tmp_path / "wh")


def test_the_resource_answers_like_the_class(warehouse):
    resource = LineageQueryResource(warehouse=warehouse)
    with LineageQuery(warehouse) as plain:
        assert resource.column_lineage(FIELD, depth=3) == plain.column_lineage(FIELD, depth=3)
        assert resource.column_lineage(FIELD, with_downstream=True) == plain.column_lineage(FIELD, with_downstream=True)
        assert resource.lineage(f"job:{NS}:p1.job4", depth=1) == plain.lineage(f"job:{NS}:p1.job4", depth=1)
        aspect = resource.fine_grained_lineage(NS, "p1.table4")
        assert aspect == plain.fine_grained_lineage(NS, "p1.table4") and aspect.fineGrainedLineages
    assert len(resource.column_lineage(FIELD).graph) > 2


def _check(warehouse):
    defs = build_definitions(LineageSettings(warehouse, warehouse, "2024-01-01"))
    [check] = [c for c in defs.asset_checks if c.check_key.name == COLUMN_FIELDS_CHECK]
    return check


def test_the_column_fields_check_uses_the_resource_and_can_fail(warehouse):
    check = _check(warehouse)
    result = check(lineage_query=LineageQueryResource(warehouse=warehouse))
    assert result.passed and result.metadata["edges"].value > 0
    # an unflagged edge naming a field its dataset does not have: the check says so
    [path] = commits.committed_files(warehouse, "current_column_lineage")
    rows = pq.read_table(path).to_pylist()
    rows[0]["output_field"] = "ghost"
    with commits.Transaction(warehouse, "test") as txn:
        txn.stage_arrow(pa.Table.from_pylist(rows), "current_column_lineage")
        txn.commit()
    result = check(lineage_query=LineageQueryResource(warehouse=warehouse))
    assert not result.passed and result.metadata["unflagged_missing_output_fields"].value == 1


def test_the_column_edge_report_reads_the_newest_commit_without_loading_the_graph(warehouse):
    """The check's counts come from the commit's two tables as they lie: the helper loads nothing
    for them, and it counts what a query over the loaded tables counts."""
    with LineageQuery(warehouse) as query:
        report = query.current_column_edge_report()
        assert query._seq is None  # nothing was loaded
        [(expected,)] = duckdb.sql(
            f"SELECT count(*) FROM ({commits.duckdb_relation_sql(commits.latest(warehouse), 'current_column_lineage')})"
        ).fetchall()
        assert report["edges"] == expected > 0
        assert report["unflagged_missing_output_fields"] == report["unflagged_missing_input_fields"] == 0


def test_the_column_edge_report_of_a_damaged_file_is_a_warehouse_read_error(warehouse):
    from lineage_assets.query.lineage_query import WarehouseReadError

    [path] = commits.committed_files(warehouse, "current_column_lineage")
    with open(path, "r+b") as handle:
        handle.truncate(100)
    with LineageQuery(warehouse) as query, pytest.raises(WarehouseReadError, match="cannot read commit"):
        query.current_column_edge_report()


def test_a_query_without_columns_answers_job_lineage_and_refuses_column_questions(warehouse):
    start = f"job:{NS}:p1.job4"
    with LineageQuery(warehouse) as whole, LineageQuery(warehouse, columns=False) as jobs_only:
        assert jobs_only.lineage(start, depth=2) == whole.lineage(start, depth=2)
        assert not jobs_only._con.execute("SELECT * FROM duckdb_tables() WHERE table_name = 'ccl'").fetchall()
        with pytest.raises(RuntimeError, match="columns=False"):
            jobs_only.column_lineage(FIELD, depth=1)


def _recommit(warehouse: str) -> None:
    """What a materialization of current_graph does to the files: new files for the four
    snapshot tables, published together by one commit (the replaced files are pruned later)."""
    with commits.Transaction(warehouse, "test_recommit") as txn:
        for table in tables.SNAPSHOTS:
            [path] = commits.committed_files(warehouse, table.name)
            txn.stage_arrow(pq.read_table(path), table)
        txn.commit()


def test_it_answers_while_the_warehouse_is_being_written_and_locks_nothing(warehouse):
    expected = LineageQuery(warehouse).column_lineage(FIELD).model_dump()
    stop = threading.Event()
    errors: list[BaseException] = []
    published = [0]

    def writer():
        try:
            while not stop.is_set():
                _recommit(warehouse)
                published[0] += 1
                stop.wait(0.05)  # far more often than a real materialization publishes
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        answers = []
        for _ in range(40):
            with LineageQuery(warehouse) as query:  # a fresh helper reads the newest commit
                answers.append(query.column_lineage(FIELD).model_dump())
            # another reader of the same files at the same time: DuckDB holds no lock on them
            duckdb.sql(f"select count(*) from ({commits.duckdb_relation_sql(commits.latest(warehouse), 'current_jobs')})").fetchall()
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert published[0] > 1  # the writer really ran alongside
    assert all(a == expected for a in answers)


def test_query_command_prints_json_and_a_tree(warehouse, capsys):
    assert main(["query", "column-lineage", FIELD, "--warehouse", warehouse, "--depth", "2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    with LineageQuery(warehouse) as query:
        graph = query.column_lineage(FIELD, depth=2)
    assert printed == graph.model_dump(mode="json")
    assert main(["query", "column-lineage", FIELD, "--warehouse", warehouse, "--depth", "2", "--tree"]) == 0
    tree = capsys.readouterr().out
    assert tree.strip() == as_tree(graph)
    assert tree.splitlines()[0].startswith(FIELD) and tree.splitlines()[1].startswith("  <- datasetField:")
    assert main(["query", "column-lineage", f"datasetField:{NS}:p1.table4:nope", "--warehouse", warehouse]) == 3
    assert main(["query", "column-lineage", "nonsense", "--warehouse", warehouse]) == 2
    assert main(["query", "lineage", f"job:{NS}:p1.job4", "--warehouse", warehouse, "--depth", "0"]) == 0
    assert {n["id"] for n in json.loads(capsys.readouterr().out)["graph"]} >= {f"job:{NS}:p1.job4"}


def test_commands_on_a_warehouse_that_cannot_be_read_say_so_with_code_4(warehouse, tmp_path, capsys):
    """DESIGN.md section 11: a bad argument is a clear error, never a traceback. `summary`,
    `files`, `query` and `tag` on a warehouse whose files or commit cannot be read exit with 4
    and say what; on a folder that does not exist (or a file), with 2, as `query` did; a drop
    folder that is a file is 2 (before: tracebacks, all-zero counts and exit 0, or 2 for a
    damaged commit file, as if the argument were wrong)."""
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(warehouse, broken)
    for path in commits.latest(str(broken)).files("current_jobs"):
        with open(path, "r+b") as handle:
            handle.truncate(40)
    bad_commit = tmp_path / "bad_commit"
    shutil.copytree(warehouse, bad_commit)
    seq = commits.latest(str(bad_commit)).seq
    (bad_commit / "_commits" / f"{seq:020d}.json").write_text("{\n")
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "data" / "warehouse" / "_commits").mkdir(parents=True)
    job = f"job:{NS}:p1.job4"
    for argv, code, says in [
        (["summary", "--warehouse", str(broken)], 4, "could not be read"),
        (["summary", "--warehouse", str(bad_commit)], 4, "cannot be read"),
        (["files", "current_jobs", "--warehouse", str(bad_commit)], 4, "cannot be read"),
        (["query", "lineage", job, "--warehouse", str(bad_commit)], 4, f"{seq:020d}.json"),
        (["tag", "set", f"dataset:{NS}:p1.table4", "pii=true", "--warehouse", str(broken), "--drop-dir", str(tmp_path / "d")], 4, "cannot read"),
        (["tag", "set", f"dataset:{NS}:p1.table4", "pii=true", "--warehouse", warehouse, "--drop-dir", str(tmp_path / "a_file")], 2, "is not a folder"),
        (["tag", "set", f"dataset:{NS}:p1.table4", "pii=true", "--warehouse", warehouse, "--drop-dir", str(tmp_path / "nodrops")], 2, "does not exist"),
        (["summary", "--warehouse", str(tmp_path / "nothing")], 2, "does not exist"),
        (["files", "current_jobs", "--warehouse", str(tmp_path / "a_file")], 2, "is a file, not a folder"),
        (["query", "lineage", job, "--warehouse", str(tmp_path / "a_file")], 2, "is a file, not a folder"),
        # the data folder given for its warehouse: not an empty warehouse, and the error names the one below
        (["summary", "--warehouse", str(tmp_path / "data")], 2, "has no _commits folder; its folder 'warehouse' is one"),
        (["query", "lineage", job, "--warehouse", str(tmp_path / "data")], 2, "is not a warehouse"),
    ]:
        assert main(argv) == code, argv
        assert says in capsys.readouterr().err, argv
