"""Node ids of the reference server (DESIGN.md section 5): every reading of a string id."""

from __future__ import annotations

import pytest

from lineage_assets.query.node_ids import NodeRef, candidates, split_version


def _readings(node_id: str) -> list[tuple]:
    return [(r.kind, r.namespace, r.name, r.field, r.version) for r in candidates(node_id)]


# --------------------------------------------------------------------------- plain forms


def test_job_id():
    assert _readings("job:ns:name") == [("job", "ns", "name", None, None)]


def test_dataset_id():
    assert _readings("dataset:ds:public.orders") == [("dataset", "ds", "public.orders", None, None)]


def test_dataset_field_id():
    assert _readings("datasetField:ds:orders:amount") == [("datasetField", "ds", "orders", "amount", None)]


def test_node_ref_id_round_trips():
    for node_id in ("job:ns:name", "dataset:postgres://db.example.com:5432:public.orders", "datasetField:ds:orders:amount"):
        assert node_id in {r.id for r in candidates(node_id)}
    assert NodeRef("datasetField", "ns", "t", "f").id == "datasetField:ns:t:f"
    assert NodeRef("job", "ns", "n", version="v1").id == "job:ns:n"  # the version is not part of the node id


# --------------------------------------------------------------------------- '://', ports, ':' in names


def test_namespace_with_scheme_and_port():
    readings = candidates("dataset:postgres://db.example.com:5432:public.orders")
    assert NodeRef("dataset", "postgres://db.example.com:5432", "public.orders") in readings
    assert all(r.kind == "dataset" and r.namespace + ":" + r.name == "postgres://db.example.com:5432:public.orders" for r in readings)
    # every split with non-empty parts is offered; the helper resolves them against existing nodes
    assert {(r.namespace, r.name) for r in readings} == {
        ("postgres", "//db.example.com:5432:public.orders"),
        ("postgres://db.example.com", "5432:public.orders"),
        ("postgres://db.example.com:5432", "public.orders"),
    }


def test_name_with_colon():
    readings = candidates("dataset:file.localhost:file://localhost/in_file1.txt")
    assert NodeRef("dataset", "file.localhost", "file://localhost/in_file1.txt") in readings


def test_job_namespace_with_scheme_and_port():
    readings = candidates("job:airflow://scheduler.example.com:8080:dag.task")
    assert NodeRef("job", "airflow://scheduler.example.com:8080", "dag.task") in readings


def test_dataset_field_with_scheme_port_and_colon_in_field():
    readings = candidates("datasetField:postgres://db:5432:public.orders:amount")
    assert NodeRef("datasetField", "postgres://db:5432", "public.orders", "amount") in readings
    assert all(r.kind == "datasetField" and r.namespace and r.name and r.field for r in readings)
    readings = candidates("datasetField:ns:t:a:b")
    assert NodeRef("datasetField", "ns", "t", "a:b") in readings
    assert NodeRef("datasetField", "ns", "t:a", "b") in readings


# --------------------------------------------------------------------------- versions


def test_version_suffix():
    assert split_version("job:ns:name#v1") == ("job:ns:name", "v1")
    version = "4b3e1d2c-9d7a-5f10-8c33-2a1d0c9b8e77"
    assert split_version(f"dataset:postgres://db:5432:public.orders#{version}") == ("dataset:postgres://db:5432:public.orders", version)
    # read both ways: with the version, and whole (a '#' in a name or field); the query keeps the one that exists
    assert _readings(f"dataset:ds:orders#{version}") == [("dataset", "ds", "orders", None, version), ("dataset", "ds", f"orders#{version}", None, None)]
    assert _readings("datasetField:ds:orders:amount#v2") == [
        ("datasetField", "ds", "orders", "amount", "v2"), ("datasetField", "ds", "orders", "amount#v2", None),
    ]


def test_no_version_suffix():
    assert split_version("job:ns:name") == ("job:ns:name", None)
    assert split_version("job:ns:name#") == ("job:ns:name#", None)


def test_hash_followed_by_colon_or_slash_is_part_of_the_name():
    """A '#' that is followed by ':' or '/' cannot be a version suffix: it belongs to the id."""
    assert split_version("dataset:file:///data/a#b/c.csv") == ("dataset:file:///data/a#b/c.csv", None)
    assert split_version("dataset:ns:a#b:c") == ("dataset:ns:a#b:c", None)
    assert NodeRef("dataset", "file", "///data/a#b/c.csv") in candidates("dataset:file:///data/a#b/c.csv")


# --------------------------------------------------------------------------- malformed


@pytest.mark.parametrize("bad", ["", None, 42])
def test_empty_or_non_string_id_is_rejected(bad):
    with pytest.raises(ValueError, match="non-empty string"):
        candidates(bad)


@pytest.mark.parametrize("bad", ["table:ns:name", "Job:ns:name", "ns:name", "job", "#v1", "dataset"])
def test_unknown_kind_is_rejected_naming_the_kinds(bad):
    with pytest.raises(ValueError) as info:
        candidates(bad)
    message = str(info.value)
    assert repr(bad) in message
    assert "job:" in message and "dataset:" in message and "datasetField:" in message


@pytest.mark.parametrize(
    "bad, shape",
    [
        ("job:ns", "job:namespace:name"),
        ("job:ns:", "job:namespace:name"),
        ("job::name", "job:namespace:name"),
        ("dataset:", "dataset:namespace:name"),
        ("dataset:ns", "dataset:namespace:name"),
        ("datasetField:ns:name", "datasetField:namespace:name:field"),
        ("datasetField:ns:name:", "datasetField:namespace:name:field"),
        ("job:ns#v1", "job:namespace:name"),
    ],
)
def test_missing_name_is_rejected_with_the_expected_shape(bad, shape):
    with pytest.raises(ValueError) as info:
        candidates(bad)
    assert repr(bad) in str(info.value)
    assert shape in str(info.value)


def test_empty_middle_part_is_rejected():
    with pytest.raises(ValueError, match="empty namespace or name"):
        candidates("datasetField:ns::f")
