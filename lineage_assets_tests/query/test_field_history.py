"""Field lineage over time (DESIGN.md section 8): the CDAP design's own example, windows that
select runs by end time, detailed operations, the dataset resource.

`Employee` is built from `Person`, `HR` and `Skills`; `Person` itself is rebuilt inside the
window from `Crm`; `Report` reads `Employee`. `Boundary` is written by three runs that end
exactly at the window's start, inside it after starting before it, and exactly at its end.

The tests at the end build small histories with pyarrow (`_history`, no Spark).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from lineage_assets import LineageQuery, NodeNotFound
from lineage_assets.warehouse import tables as t
from lineage_assets_tests.support import commit_rows, ds, fold_stream, publish_current, run_event

SCHEDULE_SECONDS = 40

NS = "postgres://hr.example.com:5432"
START, END = "2024-06-01T00:00:00Z", "2024-06-02T00:00:00Z"
NARROW_START = "2024-06-01T03:00:00Z"  # after Person's rebuild (02:00), at Employee's build (03:00)


def _t(day: int, hour: int, minute: int = 0) -> str:
    return f"2024-06-{day:02d}T{hour:02d}:{minute:02d}:00Z"


def _tr(type_: str, subtype: str, description: str = "", masking: bool = False) -> dict:
    return {"type": type_, "subtype": subtype, "description": description, "masking": masking}


ADDRESS = {"name": "address", "type": "struct", "fields": [{"name": "street", "type": "string"}, {"name": "city", "type": "string"}]}


def _out(name: str, fields: list[str], mapping: dict[str, list[tuple[str, str, list[dict]]]], extra: tuple[dict, ...] = ()) -> dict:
    schema = {"fields": [{"name": f, "type": "string"} for f in fields] + list(extra)}
    return ds(name, namespace=NS, schema=schema, columnLineage={"fields": {
        out: {"inputFields": [{"namespace": NS, "name": d, "field": f, "transformations": t} for d, f, t in inputs]}
        for out, inputs in mapping.items()
    }})


def _in(name: str, fields: list[str]) -> dict:
    return ds(name, namespace=NS, schema={"fields": [{"name": f, "type": "string"} for f in fields]})


CONCAT = _tr("DIRECT", "TRANSFORMATION", "concat(first_name, ' ', last_name)")
IDENTITY = _tr("DIRECT", "IDENTITY")
MASK = _tr("DIRECT", "TRANSFORMATION", "sha2(ssn)", masking=True)
FILTER = _tr("INDIRECT", "FILTER", "where active")


def _stream() -> list[dict]:
    person_fields = ["first_name", "last_name", "ssn", "person_id"]
    return [
        # Person rebuilt from Crm inside the window
        run_event(_t(1, 2), "COMPLETE", "p1", "person_builder", [_in("Crm", ["fname", "lname", "ssn", "id"])], [
            _out("Person", person_fields, {"first_name": [("Crm", "fname", [IDENTITY])], "last_name": [("Crm", "lname", [IDENTITY])],
                                           "ssn": [("Crm", "ssn", [IDENTITY])], "person_id": [("Crm", "id", [IDENTITY])]},
                 extra=(ADDRESS,)),  # a nested field that takes part in no lineage
        ], job_namespace=NS),
        # Employee from Person, HR and Skills: a concatenated name, a masked hash, a filter
        run_event(_t(1, 3), "COMPLETE", "e1", "employee_builder", [
            _in("Person", person_fields), _in("HR", ["dept", "active"]), _in("Skills", ["skill_name"]),
        ], [
            _out("Employee", ["name", "ssn_hash", "department", "skill"], {
                "name": [("Person", "first_name", [CONCAT]), ("Person", "last_name", [CONCAT]), ("HR", "active", [FILTER])],
                "ssn_hash": [("Person", "ssn", [MASK])],
                "department": [("HR", "dept", [IDENTITY])],
                "skill": [("Skills", "skill_name", [IDENTITY])],
            }),
        ], job_namespace=NS),
        # Report reads Employee
        run_event(_t(1, 4), "COMPLETE", "r1", "reporting", [_in("Employee", ["name", "department"])], [
            _out("Report", ["headcount"], {"headcount": [("Employee", "name", [_tr("INDIRECT", "AGGREGATION", "count(*)")])]}),
        ], job_namespace=NS),
        # the window's edges: a run ending at its start (in), one spanning its start (in), one ending at its end (out)
        run_event(START, "COMPLETE", "b_start", "at_start", [_in("Early", ["x"])], [_out("Boundary", ["v"], {"v": [("Early", "x", [IDENTITY])]})], job_namespace=NS),
        run_event("2024-05-31T23:00:00Z", "START", "b_span", "spanning", [_in("Spanning", ["y"])], [], job_namespace=NS),
        run_event(_t(1, 1), "COMPLETE", "b_span", "spanning", [], [_out("Boundary", ["v"], {"v": [("Spanning", "y", [IDENTITY])]})], job_namespace=NS),
        run_event(END, "COMPLETE", "b_end", "at_end", [_in("Late", ["z"])], [_out("Boundary", ["v"], {"v": [("Late", "z", [IDENTITY])]})], job_namespace=NS),
    ]


@pytest.fixture(scope="module")
def query(spark, tmp_path_factory):
    folded = fold_stream(spark, _stream())
    warehouse = tmp_path_factory.mktemp("field_history_wh")
    publish_current(spark, folded.state, str(warehouse), folded=folded)
    with LineageQuery(str(warehouse)) as q:
        yield q


def _pairs(answer, level: int | None = None) -> set[tuple[str, str, int]]:
    return {(m.source.name, m.destination.name, m.level) for m in answer.root if level is None or m.level == level}


def test_backward_level_one_gives_the_three_sources_of_employee(query):
    answer = query.field_mappings(NS, "Employee", START, END)
    assert _pairs(answer) == {("Person", "Employee", 1), ("HR", "Employee", 1), ("Skills", "Employee", 1)}
    person = next(m for m in answer.root if m.source.name == "Person")
    assert {(f.from_, f.to) for f in person.fieldmap} == {("first_name", "name"), ("last_name", "name"), ("ssn", "ssn_hash")}
    masked = next(f for f in person.fieldmap if f.to == "ssn_hash")
    assert [t.model_dump() for t in masked.transformations] == [MASK]  # masking and description kept
    assert [r.runId for r in person.runs] and person.runs[0].job.name == "employee_builder"
    dumped = answer.model_dump()
    assert dumped[0]["fieldmap"][0].keys() == {"from", "to", "transformations"}


def test_level_two_adds_the_rebuild_of_person_from_crm(query):
    answer = query.field_mappings(NS, "Employee", START, END, levels=2)
    assert _pairs(answer, 2) == {("Crm", "Person", 2)}
    assert _pairs(answer, 1) == _pairs(query.field_mappings(NS, "Employee", START, END), 1)
    assert _pairs(query.field_mappings(NS, "Employee", START, END, levels=20)) == _pairs(answer)  # nothing further back


def test_a_window_that_excludes_the_rebuild_of_person_drops_level_two(query):
    answer = query.field_mappings(NS, "Employee", NARROW_START, END, levels=2)
    assert _pairs(answer, 2) == set()
    assert _pairs(answer, 1) == {("Person", "Employee", 1), ("HR", "Employee", 1), ("Skills", "Employee", 1)}  # 03:00 is at the start: in


def test_forward_from_person_finds_employee_and_what_reads_it(query):
    answer = query.field_mappings(NS, "Person", START, END, direction="forward", levels=3)
    assert _pairs(answer) == {("Person", "Employee", 1), ("Employee", "Report", 2)}
    both = query.field_mappings(NS, "Person", START, END, direction="both", levels=3)
    assert {(m.direction, m.source.name, m.destination.name) for m in both.root} == {
        ("forward", "Person", "Employee"), ("forward", "Employee", "Report"), ("backward", "Crm", "Person"),
    }


def test_window_boundaries_select_runs_by_end_time(query):
    sources = {m.source.name for m in query.field_mappings(NS, "Boundary", START, END).root}
    assert sources == {"Early", "Spanning"}  # ended at start: in; started before and ended inside: in; ended at end: out
    assert {m.source.name for m in query.field_mappings(NS, "Boundary", END, "2024-06-03T00:00:00Z").root} == {"Late"}
    epoch_start, epoch_end = 1717200000, 1717286400  # the same window in epoch seconds
    assert query.field_mappings(NS, "Boundary", epoch_start, epoch_end) == query.field_mappings(NS, "Boundary", START, END)


@pytest.mark.parametrize("start, end", [(END, START), (START, START), ("not a time", END), (START, float("nan"))])
def test_a_bad_window_is_a_value_error(query, start, end):
    with pytest.raises(ValueError):
        query.field_mappings(NS, "Employee", start, end)


def test_an_unknown_dataset_is_not_found_and_bad_arguments_are_value_errors(query):
    with pytest.raises(NodeNotFound):
        query.field_mappings(NS, "Nobody", START, END)
    with pytest.raises(ValueError, match="direction"):
        query.field_mappings(NS, "Employee", START, END, direction="sideways")
    with pytest.raises(ValueError, match="levels"):
        query.field_mappings(NS, "Employee", START, END, levels=0)


def test_fields_lists_lineage_fields_and_on_request_the_current_schema(query):
    assert [f.model_dump() for f in query.fields(NS, "Person", START, END).root] == [
        {"name": n, "lineage": True} for n in ("first_name", "last_name", "person_id", "ssn")
    ]
    assert [f.name for f in query.fields(NS, "Person", START, END, prefix="LAST").root] == ["last_name"]
    assert {f.name: f.lineage for f in query.fields(NS, "HR", START, END, include_current=True).root} == {"dept": True, "active": True}
    with_current = {f.name: f.lineage for f in query.fields(NS, "Person", START, END, include_current=True).root}
    assert {n: v for n, v in with_current.items() if not v} == {"address": False, "address.street": False, "address.city": False}
    assert all(with_current[n] for n in ("first_name", "last_name", "person_id", "ssn"))
    assert "address.city" not in {f.name for f in query.fields(NS, "Person", START, END).root}
    # Employee's fields are all outputs of lineage; Skills has no current schema beyond its one field
    assert {f.name for f in query.fields(NS, "Employee", START, END).root} == {"name", "ssn_hash", "department", "skill"}


def test_field_operations_of_a_multi_input_multi_transformation_field(query):
    answer = query.field_operations(NS, "Employee", "name", START, END)
    nodes = {n.id: n for n in answer.nodes}
    assert set(nodes) == {f"datasetField:{NS}:{d}:{f}" for d, f in (("Person", "first_name"), ("Person", "last_name"), ("HR", "active"), ("Employee", "name"))}
    assert nodes[f"datasetField:{NS}:Employee:name"].destinationEndPoint.name == "Employee"
    assert nodes[f"datasetField:{NS}:HR:active"].sourceEndPoint.name == "HR"
    assert {(o.type, o.subtype, o.description) for o in answer.operations} == {
        ("DIRECT", "TRANSFORMATION", CONCAT["description"]), ("INDIRECT", "FILTER", FILTER["description"]),
    }
    names = {o.name for o in answer.operations}
    assert {c.operation for c in answer.connections} == names and len(answer.connections) == 3
    assert [p.job.name for p in answer.programs] == ["employee_builder"] and answer.programs[0].runs
    masked = query.field_operations(NS, "Employee", "ssn_hash", START, END)
    assert [(o.masking, o.name) for o in masked.operations] == [(True, "DIRECT:TRANSFORMATION:MASKED")]


def test_backward_and_forward_are_mirror_images_on_a_two_job_chain(query):
    # Crm.fname -> Person.first_name -> Employee.name
    forward = query.field_operations(NS, "Person", "first_name", START, END, direction="forward")
    backward = query.field_operations(NS, "Employee", "name", START, END)
    edge = (f"datasetField:{NS}:Person:first_name", f"datasetField:{NS}:Employee:name")
    assert edge in {(c.from_, c.to) for c in forward.connections} and edge in {(c.from_, c.to) for c in backward.connections}
    back_of_person = query.field_operations(NS, "Person", "first_name", START, END)
    forward_of_crm = query.field_operations(NS, "Crm", "fname", START, END, direction="forward")
    assert back_of_person == forward_of_crm


def test_dataset_resource_carries_the_column_lineage_of_a_depth_one_answer(query):
    resource = query.dataset(NS, "Employee")
    assert resource.id.name == "Employee" and resource.physicalName == "Employee" and resource.type == "DB_TABLE"
    assert [f.name for f in resource.fields] == ["name", "ssn_hash", "department", "skill"]
    assert resource.currentVersion and resource.lastModifiedAt and resource.createdAt
    assert "schema" in resource.facets and "columnLineage" in resource.facets
    graph = query.column_lineage(f"dataset:{NS}:Employee", depth=1)
    expected = {
        n.data["field"]: sorted((i["dataset"], i["field"]) for i in n.data["inputFields"])
        for n in graph.graph if n.data["dataset"] == "Employee" and n.data["inputFields"]
    }
    assert {e.name: sorted((i.dataset, i.field) for i in e.inputFields) for e in resource.columnLineage} == expected
    name = next(e for e in resource.columnLineage if e.name == "name")
    assert {(i.field, i.transformationType) for i in name.inputFields} == {("first_name", "DIRECT"), ("last_name", "DIRECT"), ("active", "INDIRECT")}
    with pytest.raises(NodeNotFound):
        query.dataset(NS, "Nobody")


def test_the_command_line_answers_as_the_helper_does(query, capsys):
    from lineage_assets.cli import main

    asks = {
        ("fields", NS, "Person", "--start", START, "--end", END, "--include-current"):
            query.fields(NS, "Person", START, END, include_current=True),
        ("field-mappings", NS, "Employee", "--start", START, "--end", END, "--levels", "2"):
            query.field_mappings(NS, "Employee", START, END, levels=2),
        ("field-operations", NS, "Employee", "name", "--start", START, "--end", END):
            query.field_operations(NS, "Employee", "name", START, END),
        ("dataset", NS, "Employee"): query.dataset(NS, "Employee"),
    }
    for argv, expected in asks.items():
        assert main(["query", *argv, "--warehouse", query.warehouse]) == 0
        assert json.loads(capsys.readouterr().out) == expected.model_dump(mode="json")
    assert main(["query", "field-mappings", NS, "Employee", "--start", START, "--end", END, "--levels", "2", "--table",
                 "--warehouse", query.warehouse]) == 0
    table = capsys.readouterr().out
    assert f"backward level 2: {NS}:Crm -> {NS}:Person" in table and "first_name -> name" in table
    assert main(["query", "field-mappings", NS, "Nobody", "--warehouse", query.warehouse]) == 3
    assert main(["query", "fields", NS, "Employee", "--start", END, "--end", START, "--warehouse", query.warehouse]) == 2
    assert "must be before its end" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- pyarrow histories (no Spark)


def _when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _history(root, runs, edges, extra=None) -> str:
    """A history in NS written with pyarrow: `runs` [(run id, job, ended at, [output names])], each
    COMPLETE and writing version `<output>@<run>`; `edges` [(run, output, output field or None,
    input, input field)] (a null output field is INDIRECT:FILTER, the others DIRECT:IDENTITY).
    `extra`: more tables' rows."""
    ended = {run: at for run, _job, at, _outputs in runs}
    rows = {
        t.RUN_LINEAGE: [{"run_id": run, "job_namespace": NS, "job_name": job, "state": "COMPLETE", "started_at": at, "ended_at": at,
                         "input_versions": [], "output_versions": [{"namespace": NS, "name": o, "version_id": f"{o}@{run}"} for o in outputs],
                         "end_date": at.date()} for run, job, at, outputs in runs],
        t.DATASET_VERSIONS: [{"version_id": f"{o}@{run}", "namespace": NS, "name": o, "run_id": run, "run_state": "COMPLETE",
                              "job_namespace": NS, "job_name": job, "created_at": at, "created_date": at.date()}
                             for run, job, at, outputs in runs for o in outputs],
        t.COLUMN_LINEAGE: [{"output_version_id": f"{out}@{run}", "output_namespace": NS, "output_name": out, "output_field": out_field,
                            "input_namespace": NS, "input_name": inp, "input_field": in_field, "input_version_id": f"{inp}@src",
                            "transformation_type": "INDIRECT" if out_field is None else "DIRECT",
                            "transformation_subtype": "FILTER" if out_field is None else "IDENTITY", "masking": False,
                            "run_id": run, "created_at": ended[run], "created_date": ended[run].date(), "input_declared": True}
                           for run, out, out_field, inp, in_field in edges],
        **(extra or {}),
    }
    return commit_rows(str(root), rows)


def test_programs_order_runs_and_take_the_last_time_by_timestamp_not_by_text(tmp_path):
    """Two runs of one job end half a second apart, at 05:00:00.5 and 05:00:00: as text,
    '...05:00:00.500000Z' sorts before '...05:00:00Z', so comparing the ISO strings gives the
    earlier run as the last and the runs in the wrong order."""
    ends = {"late": _when("2024-06-01T05:00:00.500000Z"), "early": _when("2024-06-01T05:00:00Z")}
    root = _history(tmp_path / "wh", [(run, "J", at, ["O"]) for run, at in ends.items()],
                    [(run, "O", "x", "S", "a") for run in ends])
    with LineageQuery(root) as query:
        for direction, (ns, name, field) in (("backward", (NS, "O", "x")), ("forward", (NS, "S", "a"))):
            [program] = query.field_operations(ns, name, field, direction=direction).programs
            assert [r.runId for r in program.runs] == sorted(ends, key=ends.get)
            assert [_when(r.endedAt) for r in program.runs] == sorted(ends.values())
            assert _when(program.lastExecutedAt) == max(ends.values())


def test_dataset_fields_carry_type_description_and_the_tags_of_the_newest_tags_facet(tmp_path):
    """DESIGN.md section 8: the Dataset's `fields` with type/tags/description. A field's tags are
    the tag names (keys) the dataset's newest tags facet gives it (section 9: a later facet
    replaces the set; here a DatasetEvent's, after the run that wrote the current version), as
    the reference server lists a field's tags: names. A dataset-wide tag is no field's."""
    t1, t2, t3 = _when("2024-06-01T01:00:00Z"), _when("2024-06-01T02:00:00Z"), _when("2024-06-01T03:00:00Z")
    schema = [("x", "string", "the x"), ("y", "int", None), ("z", "double", "the z")]

    def tag(version, at, field, key, value=None, run=None):
        return {"version_id": version, "namespace": NS, "name": "O", "field": field, "tag_key": key, "tag_value": value,
                "source": "test", "run_id": run, "created_at": at, "created_date": at.date()}

    older = [tag("O@r1", t1, "x", "stale"), tag("O@r1", t1, "y", "stale")]
    newest = [tag("O@tags", t3, "x", "sensitivity", "high"), tag("O@tags", t3, "x", "pii", "true"),
              tag("O@tags", t3, "z", "pii", "false"), tag("O@tags", t3, None, "owner", "hr")]
    extra = {
        t.CURRENT_DATASET_FIELDS: [{"namespace": NS, "name": "O", "version_id": "O@r2", "field_path": path, "type": kind,
                                    "description": text, "ordinal": i} for i, (path, kind, text) in enumerate(schema)],
        t.FIELD_TAGS: older + newest,
    }
    root = _history(tmp_path / "wh", [("r1", "J", t1, ["O"]), ("r2", "J", t2, ["O"])], [("r2", "O", "x", "S", "a")], extra)
    expected_tags = {path: sorted({r["tag_key"] for r in newest if r["field"] == path}) for path, _kind, _text in schema}
    with LineageQuery(root) as query:
        resource = query.dataset(NS, "O")
        assert resource.currentVersion == "O@r2"
        assert [(f.name, f.type, f.description, f.tags) for f in resource.fields] == [
            (path, kind, text, expected_tags[path]) for path, kind, text in schema]
        assert any(f.tags for f in resource.fields) and not expected_tags["y"]  # the older facet's tag on y is replaced
        assert resource.model_dump()["fields"][0]["tags"] == expected_tags["x"]


def _pairs_with_levels(answer) -> list[tuple[str, str, int]]:
    return [(m.source.name, m.destination.name, m.level) for m in answer.root]


def test_both_directions_list_each_mapping_once_at_its_lowest_level_across_directions(tmp_path):
    """DESIGN.md section 8: a mapping (a source -> destination dataset pair: the design's shape
    has no direction) appears once, at its lowest level. On X <-> Y, backward from X reaches
    Y -> X at level 1 and X -> Y at level 2, forward X -> Y at level 1 and Y -> X at level 2:
    `both` lists each pair once, at level 1."""
    at = _when("2024-06-01T06:00:00Z")
    root = _history(tmp_path / "wh", [("xy", "jxy", at, ["Y"]), ("yx", "jyx", at + dt.timedelta(hours=1), ["X"])],
                    [("xy", "Y", "y", "X", "x"), ("yx", "X", "x", "Y", "y")])
    with LineageQuery(root) as query:
        one_way = [query.field_mappings(NS, "X", direction=way, levels=10) for way in ("backward", "forward")]
        lowest: dict[tuple[str, str], int] = {}
        for source, destination, level in (p for answer in one_way for p in _pairs_with_levels(answer)):
            lowest[(source, destination)] = min(level, lowest.get((source, destination), level))
        both = query.field_mappings(NS, "X", direction="both", levels=10)
        pairs = [(source, destination) for source, destination, _level in _pairs_with_levels(both)]
        assert len(pairs) == len(set(pairs)) == 2
        assert {(s, d): level for s, d, level in _pairs_with_levels(both)} == lowest == {("X", "Y"): 1, ("Y", "X"): 1}
        kept = {(m.source.name, m.destination.name): m for m in both.root}
        for answer in one_way:  # each kept mapping is the one of the direction that reaches it first
            for m in answer.root:
                if m.level == lowest[(m.source.name, m.destination.name)]:
                    assert kept[(m.source.name, m.destination.name)] == m


def test_a_dataset_wide_dependency_is_a_fieldmap_entry_to_null_and_the_dump_keeps_the_key(tmp_path):
    """DESIGN.md section 8: a dataset-wide dependency (output field null: a filter's column)
    appears as `"to": null`; `model_dump()` and the JSON the CLI and HTTP send keep the key."""
    from lineage_assets.query.render import jsonable

    edges = [("f", "C", "c", "Src", "a"), ("f", "C", None, "Src", "active")]
    root = _history(tmp_path / "wh", [("f", "filter_job", _when("2024-06-01T05:00:00Z"), ["C"])], edges)
    with LineageQuery(root) as query:
        answer = query.field_mappings(NS, "C")
        [mapping] = answer.root
        assert {(f.from_, f.to) for f in mapping.fieldmap} == {(in_field, out_field) for _r, _o, out_field, _i, in_field in edges}
        for dumped in (answer.model_dump(), jsonable(answer), json.loads(json.dumps(answer.model_dump(mode="json")))):
            entries = {entry["from"]: entry for entry in dumped[0]["fieldmap"]}
            assert "to" in entries["active"] and entries["active"]["to"] is None
            assert entries["active"]["transformations"][0]["type"] == "INDIRECT" and entries["a"]["to"] == "c"


def _bfs_levels(edges: list[tuple[str, str]], start: str, direction: str) -> dict[tuple[str, str], int]:
    """Each (source, destination) pair reachable from `start` with its lowest level: one more
    than the shortest distance from `start` to the pair's near end (its destination backward,
    its source forward)."""
    step = {}
    for source, destination in edges:
        near, far = (destination, source) if direction == "backward" else (source, destination)
        step.setdefault(near, []).append(far)
    distance, queue = {start: 0}, [start]
    for here in queue:
        for there in step.get(here, []):
            if there not in distance:
                distance[there] = distance[here] + 1
                queue.append(there)
    return {(s, d): distance[d if direction == "backward" else s] + 1 for s, d in edges
            if (d if direction == "backward" else s) in distance}


@pytest.mark.parametrize("shape, edges, starts", [
    ("cycle", [("X", "Y"), ("Y", "X")], ["X", "Y"]),
    # a diamond A -> B, C -> D with a shortcut A -> D and a source Z of A: backward from D, A is
    # reached at level 1 (the shortcut) and again at level 2 (through B and C), so Z -> A is level 2
    ("diamond", [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"), ("A", "D"), ("Z", "A")], ["D", "Z", "A"]),
])
def test_cycles_end_and_each_mapping_appears_once_at_its_breadth_first_level(tmp_path, shape, edges, starts):
    at = _when("2024-06-01T06:00:00Z")
    runs = [(f"{s}{d}", f"job_{s}{d}", at + dt.timedelta(minutes=i), [d]) for i, (s, d) in enumerate(edges)]
    root = _history(tmp_path / "wh", runs, [(f"{s}{d}", d, "f", s, "f") for s, d in edges])
    with LineageQuery(root) as query:
        for start in starts:
            for direction in ("backward", "forward"):
                answer = _pairs_with_levels(query.field_mappings(NS, start, direction=direction, levels=10))
                pairs = [(s, d) for s, d, _level in answer]
                assert len(pairs) == len(set(pairs)), (shape, start, direction, answer)
                assert {(s, d): level for s, d, level in answer} == _bfs_levels(edges, start, direction), (shape, start, direction)
                assert [level for _s, _d, level in answer] == sorted(level for _s, _d, level in answer)


def test_window_bounds_in_every_accepted_form_select_the_same_runs(tmp_path):
    """`start`/`end` as ISO with offsets (+02:00, -05:00), naive ISO (UTC), epoch seconds as
    numbers or text, fractional epoch seconds: the same instants select the same runs (by end
    time, `[start, end)`); a fractional end 0.5 s after a run's end includes that run, an end
    exactly at it does not."""
    start, end = _when("2024-06-01T00:00:00Z"), _when("2024-06-02T00:00:00Z")
    ends = {"Early": start, "Span": _when("2024-06-01T01:00:00Z"), "Almost": end - dt.timedelta(microseconds=1),
            "Late": end, "Half": end + dt.timedelta(seconds=0.5)}
    root = _history(tmp_path / "wh", [(f"r_{src}", f"j_{src}", at, ["B"]) for src, at in ends.items()],
                    [(f"r_{src}", "B", "v", src, "x") for src in ends])

    def sources(low, high) -> set[str]:
        return {m.source.name for m in query.field_mappings(NS, "B", low, high).root}

    def inside(low: dt.datetime, high: dt.datetime) -> set[str]:
        return {src for src, at in ends.items() if low <= at < high}

    first, last = int(start.timestamp()), int(end.timestamp())
    with LineageQuery(root) as query:
        day = sources("2024-06-01T00:00:00Z", "2024-06-02T00:00:00Z")
        assert day == inside(start, end) and "Late" not in day
        for low, high in [
            ("2024-06-01T02:00:00+02:00", "2024-06-02T02:00:00+02:00"),
            ("2024-05-31T19:00:00-05:00", "2024-06-01T19:00:00-05:00"),
            ("2024-06-01T00:00:00", "2024-06-02T00:00:00"),  # naive: UTC
            ("2024-05-31T19:00:00-05:00", "2024-06-02T00:00:00"),
            (first, last), (str(first), str(last)), (f"{first}.0", f"{last}.000"),
        ]:
            assert sources(low, high) == day, (low, high)
        assert sources(str(last), f"{last}.5") == inside(end, ends["Half"]) == {"Late"}  # Half ends exactly at the end: out
        assert sources(first, f"{last}.5") == inside(start, ends["Half"])
        assert sources(first, last + 0.000001) == inside(start, end + dt.timedelta(microseconds=1))
        assert sources(f"{last}.5", last + 1) == {"Half"}  # at the start: in
        assert "Late" in sources(first, f"{last}.5") and "Late" not in sources(first, str(last))
