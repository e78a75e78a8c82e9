"""The one canonical JSON spelling (DESIGN.md section 4), whichever writer makes it."""

from __future__ import annotations

import json

from lineage_assets.ids import canonical_json
from lineage_assets.intake.decode import decode_drop
from lineage_assets.intake.validate import event_row


def _reference(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_the_fast_path_spells_every_character_and_key_order_as_json_dumps():
    characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(characters), 4096):
        chunk = "".join(characters[start:start + 4096])
        obj = {chunk: [chunk, "é\"\\/\u2028" + chunk[:7]], "k" + chunk[:3]: {"": None}}
        assert canonical_json(obj, floats=False) == _reference(obj), start
    keys = {"a": 1, "B": 2, "é": 3, "\U0001F600": 4, "\uffff": 5, "a\x00": 6, "aa": 7, "\ue000": 8, "\U00010000": 9}
    assert canonical_json(keys, floats=False) == _reference(keys)


def test_what_orjson_refuses_falls_back_to_json_dumps():
    deep: list = []
    for _ in range(300):  # orjson stops at 255 levels
        deep = [deep]
    for obj in ({"n": 2**64}, {"n": -(2**63) - 1}, {"n": 2**63 - 1, "m": -(2**63)}, {"s": "\ud800"}, deep, {"b": [True, False, None]}):
        assert canonical_json(obj, floats=False) == _reference(obj)


def test_floats_take_json_dumps_spelling_and_the_decoder_says_where_floats_are():
    line = b'{"a": 1e-05, "b": [0.00001, 1.5e-7, 1e16]}\n{"a": 1, "b": "1e-05"}\n[{"x": 2.0}, {"x": 2}]'
    records = decode_drop(line)
    assert [r.floats for r in records[:2]] == [True, False]
    assert canonical_json(records[0].value) == '{"a":1e-05,"b":[1e-05,1.5e-07,1e+16]}'
    array = decode_drop(b'[{"x": 2.0}, {"x": 2}]')
    assert [(r.value, r.floats) for r in array] == [({"x": 2.0}, True), ({"x": 2}, False)]
    pretty = decode_drop(b'{\n  "x": 0.5\n}\n')
    assert [(r.value, r.floats) for r in pretty] == [({"x": 0.5}, True)]


def test_an_event_with_floats_in_its_facets_keeps_the_canonical_spelling():
    event = {
        "eventType": "COMPLETE", "eventTime": "2024-01-01T00:00:00Z", "producer": "p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0176a8c2-fe01-7439-87e6-56a1a1b4029f", "facets": {"q": {"ratio": 1e-05, "big": 1e16}}},
        "job": {"namespace": "ns", "name": "j"},
        "outputs": [{"namespace": "ns", "name": "t", "facets": {"stats": {"mean": 0.00001}}, "outputFacets": {}}],
    }
    [record] = decode_drop(json.dumps(event).encode())
    row = event_row(record.value, floats=record.floats)
    assert record.floats and row["event_json"] == _reference(event)
    assert row["run_facets"] == _reference(event["run"]["facets"])
    assert row["outputs"][0]["facets"] == '{"stats":{"mean":1e-05}}'
    plain = {**event, "run": {"runId": event["run"]["runId"]}, "outputs": [{"namespace": "ns", "name": "t"}]}
    [record] = decode_drop(json.dumps(plain, ensure_ascii=False).encode())
    assert not record.floats and event_row(record.value, floats=False)["event_json"] == _reference(plain)
