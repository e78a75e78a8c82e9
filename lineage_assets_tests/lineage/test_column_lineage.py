"""Column edges, dataset fields and the current column state (DESIGN.md sections 3 and 4)."""

from __future__ import annotations

import pytest

from lineage_assets.lineage.column_lineage import flatten_schema
from lineage_assets.ids import content_uuid
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import ds, fold_stream, publish_current, run_event, run_uuid

SCHEDULE_SECONDS = 30  # measured (--durations); conftest runs long files first

D = "2024-05-01"  # the day of the single-day scenarios


def _schema(*names, **typed) -> dict:
    fields = [{"name": n, "type": "string"} for n in names] + [{"name": k, "type": v} for k, v in typed.items()]
    return {"fields": fields}


def _input(name, field, *transformations, namespace="ds"):
    entry = {"namespace": namespace, "name": name, "field": field}
    if transformations:
        entry["transformations"] = [
            {"type": t, "subtype": s, "description": f"{t.lower()} {s.lower()}", "masking": t == "DIRECT" and s == "MASKED"}
            for t, s in transformations
        ]
    return entry


def _cll(fields: dict | None = None, dataset: list | None = None, version="1-2-0") -> dict:
    facet = {"_schemaURL": f"https://openlineage.io/spec/facets/{version}/ColumnLineageDatasetFacet.json"}
    if fields is not None:
        facet["fields"] = fields
    if dataset is not None:
        facet["dataset"] = dataset
    return facet


def _edges(folded) -> list[tuple]:
    return sorted(
        (e["output_name"], e["output_field"], e["input_name"], e["input_field"], e["transformation_type"], e["transformation_subtype"])
        for e in folded.column_lineage
    )


def _key(row):
    return tuple("" if v is None else str(v) for v in row)


# ------------------------------------------------------------------ schema flattening (pure)


def test_flatten_schema_gives_dotted_paths_in_depth_first_order():
    fields = [
        {"name": "id", "type": "int", "description": "key"},
        {"name": "address", "type": "struct", "fields": [{"name": "city", "type": "string"}, {"name": "geo", "type": "struct", "fields": [{"name": "lat", "type": "double"}]}]},
        {"name": "name", "type": "string"},
        {"name": "id", "type": "bigint"},  # repeated name: the first one stays
    ]
    import json

    flat = flatten_schema(json.dumps(fields))
    assert [(f["field_path"], f["type"], f["ordinal"]) for f in flat] == [
        ("id", "int", 0), ("address", "struct", 1), ("address.city", "string", 2), ("address.geo", "struct", 3),
        ("address.geo.lat", "double", 4), ("name", "string", 5),
    ]
    assert flat[0]["description"] == "key"
    assert flatten_schema(None) is None
    assert flatten_schema("not json") is None
    assert flatten_schema('{"a": 1}') is None


# ------------------------------------------------------------------ one stream, every scenario
#
# Each scenario has its own jobs and datasets, so one fold serves them all (a fold costs seconds).

V100 = _cll({"c": {"inputFields": [_input("A", "a")]}}, version="1-0-0")
V101 = _cll({"c": {"inputFields": [_input("A", "a")], "transformationDescription": "a + 1", "transformationType": "IDENTITY"}}, version="1-0-1")
V110 = _cll({"c": {"inputFields": [_input("A", "a", ("DIRECT", "TRANSFORMATION"), ("INDIRECT", "FILTER"))]}}, version="1-1-0")
V120 = _cll({"c": {"inputFields": [_input("A", "a", ("DIRECT", "IDENTITY"))]}}, dataset=[_input("A", "k", ("INDIRECT", "SORT"))])
EARLY = _cll({"c": {"inputFields": [_input("A", "old", ("DIRECT", "IDENTITY"))]}})
LATE = _cll({"c": {"inputFields": [_input("A", "a", ("DIRECT", "IDENTITY"))]}})
FLAGGED = _cll({"c": {"inputFields": [_input("A", "a"), _input("Z", "z")]}, "ghost": {"inputFields": [_input("A", "nope")]}})
TWICE = _cll({"c": {"inputFields": [_input("A", "a", ("DIRECT", "IDENTITY")), _input("A", "a", ("DIRECT", "IDENTITY"))]}})
D1, D2, D3 = "2024-05-01", "2024-05-02", "2024-05-03"


def _writes(day, label, field, job="cur"):
    facet = _cll({"c": {"inputFields": [_input("A", field)]}})
    return run_event(f"{day}T01:00:00Z", "COMPLETE", label, job, ["A"], [ds("CUR", columnLineage=facet)])


def _stream() -> list[dict]:
    a_in = ds("A", schema=_schema("a", "k"))
    events = [
        run_event(f"{D}T0{i}:00:00Z", "COMPLETE", f"run{name}", f"job{name}", [a_in], [ds(name, schema=_schema("c"), columnLineage=facet)])
        for i, (name, facet) in enumerate((("L100", V100), ("L101", V101), ("L110", V110), ("L120", V120)))
    ]
    # a facet repeated on START/RUNNING/COMPLETE; the COMPLETE line comes first in the file
    events += [
        run_event(f"{D}T05:10:00Z", "COMPLETE", "rep", "repeat", ["A"], [ds("REP", columnLineage=LATE)]),
        run_event(f"{D}T05:00:00Z", "START", "rep", "repeat", ["A"], [ds("REP", columnLineage=EARLY)]),
        run_event(f"{D}T05:05:00Z", "RUNNING", "rep", "repeat", ["A"], [ds("REP", columnLineage=LATE)]),
    ]
    # an undeclared input and fields missing from the schemas
    events.append(run_event(f"{D}T06:00:00Z", "COMPLETE", "flag", "flagger", [ds("A", schema=_schema("a"))],
                            [ds("FLAG", schema=_schema("c"), columnLineage=FLAGGED)]))
    events.append(run_event(f"{D}T06:30:00Z", "COMPLETE", "dup", "duplicator", ["A"], [ds("DUP", columnLineage=TWICE)]))
    # the input version is the one the run read
    events += [
        run_event(f"{D}T07:00:00Z", "COMPLETE", "w", "writer", [], ["WA"]),
        run_event(f"{D}T08:00:00Z", "START", "r", "reader", ["WA"], []),
        run_event(f"{D}T08:10:00Z", "COMPLETE", "r", "reader", ["WA"], [ds("RB", columnLineage=_cll({"c": {"inputFields": [_input("WA", "a")]}}))]),
    ]
    # current column state over three days
    events += [
        _writes(D1, "c1", "a1"), _writes(D2, "c2", "a2"), _writes(D3, "c3", "a3"), _writes(D2, "o1", "x", job="other"),
        run_event(f"{D3}T05:00:00Z", "COMPLETE", "o2", "other", ["A"], ["CUR"]),  # no column lineage: its edges go
    ]
    # current fields prefer COMPLETE writes
    events += [
        run_event(f"{D1}T02:00:00Z", "COMPLETE", "f1", "fw", [], [ds("FB", schema=_schema("a", "b"))]),
        run_event(f"{D2}T02:00:00Z", "FAIL", "f2", "fw", [], [ds("FB", schema=_schema("broken"))]),
        run_event(f"{D2}T03:00:00Z", "COMPLETE", "g1", "gw", [], [ds("FC", schema=_schema(n="int"))]),
    ]
    # current column lineage: the latest terminal run's edges even when it FAILed; a job whose
    # latest runs write another dataset has no current edges into the first
    flip = lambda field: ds("FLIP", columnLineage=_cll({"c": {"inputFields": [_input("A", field)]}}))  # noqa: E731
    moved = lambda name, field: ds(name, columnLineage=_cll({"c": {"inputFields": [_input("A", field)]}}))  # noqa: E731
    events += [
        run_event(f"{D1}T09:00:00Z", "COMPLETE", "fl1", "flipper", ["A"], [flip("from_complete")]),
        run_event(f"{D2}T09:00:00Z", "FAIL", "fl2", "flipper", ["A"], [flip("from_fail")]),
        run_event(f"{D1}T10:00:00Z", "COMPLETE", "mv1", "mover", ["A"], [moved("MOVED_X", "x")]),
        run_event(f"{D2}T10:00:00Z", "COMPLETE", "mv2", "mover", ["A"], [moved("MOVED_Y", "y")]),
    ]
    return events


@pytest.fixture(scope="module")
def folded(spark):
    return fold_stream(spark, _stream() + _alias_scenario())


@pytest.fixture(scope="module")
def current_columns(spark, folded) -> list[dict]:
    """current_column_lineage of the fold's current graph (published once for the module)."""
    publish_current(spark, folded.state, folded.warehouse, folded)
    return [r.asDict(recursive=True) for r in commits.read_table(spark, folded.warehouse, "current_column_lineage").collect()]


def _of(folded, output_name: str) -> list[dict]:
    return [e for e in folded.column_lineage if e["output_name"] == output_name]


def test_every_layout_of_the_facet_is_read(folded):
    # 1-0-0: one row, no transformation
    [e100] = _of(folded, "L100")
    assert (e100["output_field"], e100["input_field"], e100["transformation_type"], e100["transformation_subtype"]) == ("c", "a", None, None)
    # 1-0-1: the per-output-field description and type are kept as legacy columns
    [e101] = _of(folded, "L101")
    assert (e101["legacy_transformation_type"], e101["legacy_transformation_description"]) == ("IDENTITY", "a + 1")
    assert e101["transformation_type"] is None
    # 1-1-0: one row per transformation
    assert sorted((e["transformation_type"], e["transformation_subtype"], e["transformation_description"]) for e in _of(folded, "L110")) == [
        ("DIRECT", "TRANSFORMATION", "direct transformation"), ("INDIRECT", "FILTER", "indirect filter"),
    ]
    # 1-2-0: dataset-wide dependencies with output_field null
    wide = [e for e in _of(folded, "L120") if e["output_field"] is None]
    assert [(e["input_field"], e["transformation_type"], e["transformation_subtype"]) for e in wide] == [("k", "INDIRECT", "SORT")]
    assert wide[0]["output_field_known"] is None


def test_edges_carry_versions_types_and_the_run(folded):
    version_of = {(v["name"], v["run_id"]): v["version_id"] for v in folded.dataset_versions}
    layout_edges = [e for name in ("L100", "L101", "L110", "L120") for e in _of(folded, name)]
    assert len(layout_edges) == 6
    for e in layout_edges:
        run = e["run_id"]
        assert e["output_version_id"] == version_of[(e["output_name"], run)]
        assert e["output_version_id"] == content_uuid({"dataset": ["ds", e["output_name"]], "run_id": run})
        # A is declared and never written: its source version
        assert e["input_version_id"] == content_uuid({"dataset": ["ds", "A"], "source": None})
        assert e["input_declared"] is True
        assert e["input_field_known"] is True and e["input_field_type"] == "string"
        if e["output_field"] is not None:
            assert e["output_field_known"] is True and e["output_field_type"] == "string"
        assert e["created_at"] == next(r["ended_at"] for r in folded.runs if r["run_id"] == run)


def test_dataset_fields_hold_each_version_fields(folded):
    rows = sorted((f["name"], f["field_path"], f["type"], f["ordinal"]) for f in folded.dataset_fields if f["name"].startswith("L"))
    assert rows == [(n, "c", "string", 0) for n in ("L100", "L101", "L110", "L120")]
    versions = {v["version_id"] for v in folded.dataset_versions}
    assert all(f["version_id"] in versions for f in folded.dataset_fields)


def test_a_facet_repeated_on_every_event_gives_one_set_of_edges_the_last_by_event_time(folded):
    assert [(e["output_field"], e["input_field"], e["transformation_type"]) for e in _of(folded, "REP")] == [("c", "a", "DIRECT")]


def test_undeclared_inputs_and_unknown_fields_are_kept_and_flagged(folded):
    by_input = {(e["output_field"], e["input_name"], e["input_field"]): e for e in _of(folded, "FLAG")}
    assert set(by_input) == {("c", "A", "a"), ("c", "Z", "z"), ("ghost", "A", "nope")}
    undeclared = by_input[("c", "Z", "z")]
    assert undeclared["input_declared"] is False and undeclared["input_version_id"] is None
    assert undeclared["input_field_known"] is None  # no schema seen for Z
    ghost = by_input[("ghost", "A", "nope")]
    assert ghost["output_field_known"] is False and ghost["input_field_known"] is False
    assert by_input[("c", "A", "a")]["output_field_known"] is True


def test_exact_duplicate_edges_are_stored_once(folded):
    assert [(e["input_field"], e["transformation_subtype"]) for e in _of(folded, "DUP")] == [("a", "IDENTITY")]


def test_input_version_is_the_version_the_run_read(folded):
    [edge] = _of(folded, "RB")
    assert edge["input_version_id"] == content_uuid({"dataset": ["ds", "WA"], "run_id": run_uuid("w")})


def test_current_column_state_keeps_the_latest_run_per_job_and_output(folded):
    current = [r.asDict() for r in folded.state.columns.collect() if r["output_name"] == "CUR"]
    assert [(r["job_name"], r["input_field"], r["run_id"]) for r in current] == [("cur", "a3", run_uuid("c3"))]
    # history keeps every version's edges
    assert sorted(e["input_field"] for e in _of(folded, "CUR")) == ["a1", "a2", "a3", "x"]


def test_current_column_lineage_is_the_latest_terminal_runs_even_when_it_failed(current_columns):
    """DESIGN.md section 4: "the column edges of the version of it written by that job's latest
    terminal run that wrote it (whatever that run's state)": a FAIL after a COMPLETE, each with its
    own columnLineage facet, leaves the FAIL's edges current."""
    current = [(r["job_name"], r["input_field"], r["run_id"]) for r in current_columns if r["output_name"] == "FLIP"]
    assert current == [("flipper", "from_fail", run_uuid("fl2"))]


def test_a_dataset_the_jobs_current_version_no_longer_outputs_has_no_current_edges_from_it(folded, current_columns):
    """DESIGN.md section 4: "for each job whose current version outputs it". A job wrote MOVED_X
    with column lineage, then its later runs write MOVED_Y only: MOVED_X's edges from that job
    stay in history, not in the current column lineage, which has the job's MOVED_Y edges alone."""
    assert [e["input_field"] for e in _of(folded, "MOVED_X")] == ["x"]
    current = [(r["output_name"], r["input_field"], r["run_id"]) for r in current_columns if r["job_name"] == "mover"]
    assert current == [("MOVED_Y", "y", run_uuid("mv2"))]


def test_current_fields_prefer_complete_writes(folded):
    fields = sorted((r["name"], r["field_path"], r["type"]) for r in folded.state.fields.collect() if r["name"] in ("FB", "FC"))
    assert fields == [("FB", "a", "string"), ("FB", "b", "string"), ("FC", "n", "int")]


def _symlinks(namespace: str, name: str) -> dict:
    return {"identifiers": [{"namespace": namespace, "name": name, "type": "TABLE"}]}


HIVE = "hive://meta:9083"


def _alias_scenario() -> list[dict]:
    """The scenario of `test_a_facet_naming_an_input_by_another_of_its_names_and_an_alias_learnt_later`,
    in jobs and datasets of its own: it joins the module's one stream."""
    direct = ("DIRECT", "IDENTITY")
    events = [
        run_event(f"{D}T01:00:00Z", "COMPLETE", "t-w", "t_w", [], [ds("/wh/t", "file", symlinks=_symlinks(HIVE, "db.t"))]),
        run_event(f"{D}T02:10:00Z", "COMPLETE", "t-r", "t_r", [ds("db.t", HIVE)],
                  [ds("t_out", columnLineage=_cll({"c": {"inputFields": [_input("/wh/t", "a", direct, namespace="file")]}}))]),
        run_event(f"{D}T03:00:00Z", "COMPLETE", "p-w", "p_w", [], [ds("events", "s3://lake")]),
        run_event(f"{D}T04:10:00Z", "COMPLETE", "p-r", "p_r", [ds("events", "s3://lake")],
                  [ds("p_out", columnLineage=_cll({"c": {"inputFields": [_input("events/date=2024-05-01/", "a", direct, namespace="s3://lake")]}}))]),
        run_event(f"{D}T16:00:00Z", "COMPLETE", "m-1", "m", ["m_src"],
                  [ds("/wh/m", "file", columnLineage=_cll({"c": {"inputFields": [_input("m_src", "a", direct)]}}))]),
        run_event(f"{D2}T16:00:00Z", "COMPLETE", "m-2", "m", ["m_src"],
                  [ds("db.m", HIVE, columnLineage=_cll({"c": {"inputFields": [_input("m_src", "b", direct)]}}))]),
        run_event(f"{D3}T16:00:00Z", "COMPLETE", "m-t", "m_tagger", [ds("/wh/m", "file", symlinks=_symlinks(HIVE, "db.m"))], ["m_out"]),
    ]
    return events


def test_a_facet_naming_an_input_by_another_of_its_names_and_an_alias_learnt_later(folded, current_columns):
    """DESIGN.md sections 4 and 10. A reader declares a table and its facet names the table's
    path (an alias another producer stated); another declares a dataset and its facet names one
    of its partitions: each edge is the declared input's, with the version the run read (before:
    a null version, `input_declared` false, the partition kept as a dataset). A job writes a path,
    then the table, and a later facet says they are one: the current column lineage is the latest
    run's alone (before: both runs' edges stayed current)."""
    read = {(r["run_id"], v["namespace"], v["name"]): v["version_id"] for r in folded.run_lineage for v in r["input_versions"]}
    for run, output, dataset in (("t-r", "t_out", (HIVE, "db.t")), ("p-r", "p_out", ("s3://lake", "events"))):
        [edge] = [e for e in folded.column_lineage if e["output_name"] == output]
        assert (edge["input_namespace"], edge["input_name"], edge["input_declared"]) == (*dataset, True), edge
        assert edge["input_version_id"] == read[(run_uuid(run), *dataset)] is not None
    current = [r for r in current_columns if r["output_name"] == "db.m"]
    assert [(r["input_field"], r["run_id"]) for r in current] == [("b", run_uuid("m-2"))]
