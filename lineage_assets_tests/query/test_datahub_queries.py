"""DataHub identity in the query helper (DESIGN.md section 8, issue 12 point 5): every query takes
a dataset or field URN, its field path in v1 or v2 form, and answers what it answers for the
node id; `fine_grained_lineage` exports the current column lineage as a valid `UpstreamLineage`
aspect that keeps masking and descriptions.

The stream: `orders (eu, 2024)` (a name with `,()` and a space) on a Postgres server with a port,
with a nested schema (a struct, an array of records, a map); `ünïcode_sales` built from it by a
job with a masked hash, an aggregation with a description and an identity of an array member; a
second Postgres server holding a table of the same name, so that its URN is ambiguous; a file
dataset on `s3a://`.
"""

from __future__ import annotations

import json

import pytest

from lineage_assets import LineageQuery, NodeNotFound
from lineage_assets.cli import main as cli_main
from lineage_assets.identity.datahub import dataset_urn, field_urn, parse_urn
from lineage_assets.query.datahub_models import UpstreamLineage
from lineage_assets.query.render import as_json
from lineage_assets.query.urns import unflatten
from lineage_assets_tests.support import ds, fold_stream, publish_current, run_event

pytestmark = pytest.mark.spark

NS = "postgres://orders-db.example.com:5432"
OTHER_NS = "postgres://replica.example.com:6543"  # same database and table names: one DataHub URN
S3 = "s3a://lake-bucket"
ORDERS = "shop.public.orders (eu, 2024)"
SALES = "shop.public.ünïcode_sales"
SHARED = "shop.public.shared"
RAW = "/raw/orders.parquet"

ORDER_FIELDS = [
    {"name": "order_id", "type": "bigint"},
    {"name": "customer", "type": "struct", "fields": [{"name": "email", "type": "string"}, {"name": "name", "type": "string"}]},
    {"name": "items", "type": "array", "fields": [
        {"name": "_element", "type": "struct", "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]},
    ]},
    {"name": "tags", "type": "map<string,string>"},
]
SALES_FIELDS = [{"name": n, "type": t} for n, t in (("order_id", "bigint"), ("email_hash", "string"), ("total_qty", "bigint"),
                                                      ("first_sku", "string"), ("a,b (c)", "string"))]


def _tr(type_: str, subtype: str, description: str = "", masking: bool = False) -> dict:
    return {"type": type_, "subtype": subtype, "description": description, "masking": masking}


MASK = _tr("DIRECT", "TRANSFORMATION", "sha2(customer.email)", masking=True)
SUM = _tr("DIRECT", "AGGREGATION", "sum(items.qty)")
IDENTITY = _tr("DIRECT", "IDENTITY")
GROUP = _tr("INDIRECT", "GROUP_BY", "group by order_id")


def _inputs(*pairs) -> list[dict]:
    return [{"namespace": NS, "name": ORDERS, "field": f, "transformations": t} for f, t in pairs]


def _stream() -> list[dict]:
    sales = ds(SALES, namespace=NS, schema={"fields": SALES_FIELDS}, columnLineage={"fields": {
        "order_id": {"inputFields": _inputs(("order_id", [IDENTITY]))},
        "email_hash": {"inputFields": _inputs(("customer.email", [MASK]))},
        "total_qty": {"inputFields": _inputs(("items._element.qty", [SUM]), ("order_id", [GROUP]))},
        "first_sku": {"inputFields": _inputs(("items._element.sku", [IDENTITY]))},
        "a,b (c)": {"inputFields": _inputs(("tags", [IDENTITY]))},
    }})
    orders = ds(ORDERS, namespace=NS, schema={"fields": ORDER_FIELDS}, columnLineage={"fields": {
        "order_id": {"inputFields": [{"namespace": S3, "name": RAW, "field": "id", "transformations": [IDENTITY]}]},
    }})
    return [
        run_event("2024-06-01T01:00:00Z", "COMPLETE", "load", "load_orders", [ds(RAW, namespace=S3, schema={"fields": [{"name": "id", "type": "long"}]})],
                  [orders], job_namespace="etl"),
        run_event("2024-06-01T02:00:00Z", "COMPLETE", "sales", "build_sales", [ds(ORDERS, namespace=NS)], [sales], job_namespace="etl"),
        run_event("2024-06-01T03:00:00Z", "COMPLETE", "a", "writes_shared_a", [], [ds(SHARED, namespace=NS)], job_namespace="etl"),
        run_event("2024-06-01T03:00:00Z", "COMPLETE", "b", "writes_shared_b", [], [ds(SHARED, namespace=OTHER_NS)], job_namespace="etl"),
    ]


@pytest.fixture(scope="module")
def query(spark, tmp_path_factory):
    folded = fold_stream(spark, _stream())
    warehouse = tmp_path_factory.mktemp("datahub_wh")
    publish_current(spark, folded.state, str(warehouse), folded=folded)
    with LineageQuery(str(warehouse)) as q:
        yield q


V2_SKU = "[version=2.0].[type=struct].[type=array].[type=struct].items.[type=string].sku"


def test_a_dataset_urn_answers_what_its_node_id_answers(query):
    urn = dataset_urn(NS, ORDERS)
    assert urn == "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.orders %28eu%2C 2024%29,PROD)"
    assert query.lineage(urn) == query.lineage(f"dataset:{NS}:{ORDERS}")
    assert query.column_lineage(urn) == query.column_lineage(f"dataset:{NS}:{ORDERS}")
    assert query.fields(urn) == query.fields(NS, ORDERS)
    assert query.field_mappings(urn, direction="both", levels=2) == query.field_mappings(NS, ORDERS, direction="both", levels=2)
    assert query.dataset(urn) == query.dataset(NS, ORDERS)
    assert query.fine_grained_lineage(dataset_urn(NS, SALES)) == query.fine_grained_lineage(NS, SALES)
    s3 = dataset_urn(S3, RAW)
    assert s3 == "urn:li:dataset:(urn:li:dataPlatform:s3,lake-bucket/raw/orders.parquet,PROD)"
    assert query.lineage(s3) == query.lineage(f"dataset:{S3}:{RAW}")


def test_v1_and_v2_field_urns_resolve_to_the_same_field(query):
    node = f"datasetField:{NS}:{ORDERS}:items._element.sku"
    by_id = query.column_lineage(node, with_downstream=True)
    v1, v2 = field_urn(NS, ORDERS, "items.sku"), field_urn(NS, ORDERS, V2_SKU)
    assert query.column_lineage(v1, with_downstream=True) == by_id
    assert query.column_lineage(v2, with_downstream=True) == by_id
    assert f"datasetField:{NS}:{SALES}:first_sku" in {n.id for n in by_id.graph}
    forward = query.field_operations(NS, ORDERS, "items._element.sku", direction="forward")
    assert query.field_operations(v2, direction="forward") == forward == query.field_operations(v1, direction="forward")
    # a top-level field's v1 path is its name; a struct member's is dotted
    email = field_urn(NS, ORDERS, "[version=2.0].[type=struct].[type=struct].customer.[type=string].email")
    assert query.column_lineage(email, with_downstream=True) == query.column_lineage(
        f"datasetField:{NS}:{ORDERS}:customer.email", with_downstream=True)


def test_urn_errors_are_value_errors_or_not_found(query):
    with pytest.raises(ValueError, match="field URN"):
        query.lineage(field_urn(NS, ORDERS, "order_id"))
    with pytest.raises(ValueError, match="dataset URN"):
        query.fields(field_urn(NS, ORDERS, "order_id"))
    with pytest.raises(ValueError):
        query.lineage("urn:li:dataset:(urn:li:dataPlatform:postgres,missing-env)")
    with pytest.raises(NodeNotFound):
        query.lineage(dataset_urn(NS, "shop.public.nothing"))
    with pytest.raises(NodeNotFound):  # the right name in another ENV
        query.lineage(dataset_urn(NS, ORDERS).replace(",PROD)", ",DEV)"))
    with pytest.raises(ValueError, match="ambiguous"):  # two servers, one URN: refused, not guessed
        query.lineage(dataset_urn(NS, SHARED))
    assert dataset_urn(NS, SHARED) == dataset_urn(OTHER_NS, SHARED)
    with pytest.raises(ValueError, match="field_operations"):
        query.field_operations(dataset_urn(NS, ORDERS))


def test_fine_grained_lineage_is_a_valid_aspect_that_keeps_masking_and_descriptions(query):
    aspect = query.fine_grained_lineage(NS, SALES)
    assert UpstreamLineage.model_validate(json.loads(aspect.model_dump_json(exclude_none=True))) == aspect
    assert [u.dataset for u in aspect.upstreams] == [dataset_urn(NS, ORDERS)]
    assert {u.type for u in aspect.upstreams} == {"TRANSFORMED"}
    by_down = {}
    for fine in aspect.fineGrainedLineages:
        assert fine.upstreamType == "FIELD_SET" and fine.downstreamType == "FIELD" and len(fine.downstreams) == 1
        by_down.setdefault(parse_urn(fine.downstreams[0]).path, []).append((fine.transformOperation, fine.upstreams))
    assert by_down["email_hash"] == [("DIRECT:TRANSFORMATION:MASKED (sha2(customer.email))", [field_urn(NS, ORDERS, "customer.email")])]
    assert sorted(by_down["total_qty"]) == [
        ("DIRECT:AGGREGATION (sum(items.qty))", [field_urn(NS, ORDERS, "items.qty")]),
        ("INDIRECT:GROUP_BY (group by order_id)", [field_urn(NS, ORDERS, "order_id")]),
    ]
    assert by_down["first_sku"] == [("DIRECT:IDENTITY", [field_urn(NS, ORDERS, "items.sku")])]
    assert by_down["a,b (c)"] == [("DIRECT:IDENTITY", [field_urn(NS, ORDERS, "tags")])]
    assert "a%2Cb %28c%29" in next(f.downstreams[0] for f in aspect.fineGrainedLineages if "a%2Cb" in f.downstreams[0])
    # every URN of the aspect leads back to a node the helper knows
    for fine in aspect.fineGrainedLineages:
        for urn in fine.upstreams + fine.downstreams:
            assert query.column_lineage(urn, depth=1, with_downstream=True).graph
    v2 = query.fine_grained_lineage(NS, SALES, path_version="v2")
    assert field_urn(NS, ORDERS, V2_SKU) in {u for f in v2.fineGrainedLineages for u in f.upstreams}
    with pytest.raises(ValueError, match="path_version"):
        query.fine_grained_lineage(NS, SALES, path_version="v3")
    upstream_of_orders = query.fine_grained_lineage(NS, ORDERS)
    assert [u.dataset for u in upstream_of_orders.upstreams] == [dataset_urn(S3, RAW)]


def test_unflatten_rebuilds_the_nested_schema_the_pipeline_flattened():
    from lineage_assets.lineage.column_lineage import flatten_schema

    rows = [(f["field_path"], f["type"]) for f in flatten_schema(json.dumps(ORDER_FIELDS))]
    assert unflatten(rows) == [
        {"name": "order_id", "type": "bigint"},
        {"name": "customer", "type": "struct", "fields": [{"name": "email", "type": "string"}, {"name": "name", "type": "string"}]},
        {"name": "items", "type": "array", "fields": [
            {"name": "_element", "type": "struct", "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]},
        ]},
        {"name": "tags", "type": "map<string,string>"},
    ]


def test_the_cli_answers_a_urn_and_exports_the_aspect(query, capsys):
    assert cli_main(["query", "datahub", NS, SALES, "--warehouse", query.warehouse]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(query.fine_grained_lineage(NS, SALES).model_dump_json(exclude_none=True))
    assert cli_main(["query", "datahub", dataset_urn(NS, SALES), "--warehouse", query.warehouse]) == 0
    assert json.loads(capsys.readouterr().out) == printed
    assert cli_main(["query", "column-lineage", field_urn(NS, ORDERS, V2_SKU), "--downstream", "--warehouse", query.warehouse]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(as_json(query.column_lineage(field_urn(NS, ORDERS, V2_SKU), with_downstream=True)))
    assert cli_main(["query", "datahub", NS, SALES, "--table", "--warehouse", query.warehouse]) == 0
    table = capsys.readouterr().out
    assert "email_hash <- shop.public.orders (eu, 2024).customer.email  [DIRECT:TRANSFORMATION:MASKED (sha2(customer.email))]" in table
