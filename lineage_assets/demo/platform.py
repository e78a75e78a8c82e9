"""A deterministic generator of realistic OpenLineage event streams (the pipeline benchmark's input).

`generate(path, events, days, ...)` writes exactly `events` compact NDJSON events (gzip with
`compress`) spread evenly over `days` UTC days; `iter_lines` yields the same lines and
`iter_events` the same events as dicts. Same arguments and seed => byte-identical output.

The platform
------------
A model of a data platform is built first (from `random.Random(seed)` only):

- systems: four Postgres databases (`postgres://orders-db.prod:5432`, ...), Kafka
  (`kafka://broker:9092`), an S3 landing bucket, the lake (`s3://lake-raw`, `s3://lake-curated`),
  `bigquery` and Snowflake (`snowflake://acme.eu-west-1`);
- producers: the Spark listener, Airflow, dbt and openlineage-python, each with its own
  `producer` URL, job namespace, job naming style, `jobType` and `sourceCodeLocation` facets
  (the git version changes now and then: a new code version);
- pipelines of 3-30 jobs in layers: ingestion jobs read a source table/topic/landing folder
  and write a raw table; transformation jobs read 1-4 tables of earlier layers (mostly of their
  own pipeline, so datasets written in a pipeline are read back in it; some shared hub tables,
  e.g. `dim_customers`, are read by many jobs) and write 1-2 tables;
- the Spark listener names each lake path's metastore table in a `symlinks` facet
  (`hive://metastore.prod:9083`, `curated_catalog.dim_products`), as the real listener does;
- every dataset has a schema of 5-20 fields drawn from a domain vocabulary (~10% nested structs,
  some descriptions); outputs have a `columnLineage` facet (spec 1-2-0) derived from the job's
  input schemas: pass-through fields (IDENTITY, or TRANSFORMATION `coalesce` when several
  inputs carry the field), derived fields (AGGREGATION/TRANSFORMATION with an expression, some
  masking), and sometimes dataset-wide INDIRECT JOIN/FILTER dependencies.

The stream
----------
Each run is START + COMPLETE (inputs on START; inputs and outputs with all facets on
COMPLETE), ~2% FAIL instead of COMPLETE (with an `errorMessage` facet), ~1% of runs also send a
RUNNING event; Airflow runs (and some Spark runs) carry a `parent` facet naming the Airflow DAG
run. Runs are spread over each day with a nightly batch peak; only the last run of a day may
straddle midnight (its terminal event then belongs to, and is counted in, the next day; never
past the last day). Lines are in eventTime order.

Speed and memory
----------------
`json.dumps` of one ~10 KB event alone takes ~110 us (~90 MB/s), so serializing dicts could not
reach ~10,000 events/s. Lines are therefore assembled from pre-serialized JSON fragments (each
made by the same compact `json.dumps`); every line equals
`json.dumps(json.loads(line), separators=(",", ":"))` byte for byte (tested), and `iter_events`
is `json.loads` over `iter_lines` (fresh dicts, one code path for both). The platform model is
compact (~1 KB per job: field indices and names); a job's static text (job facets, inputs,
outputs with schema and column lineage) is built on demand into a cache bounded by size (more
room for small platforms, whose jobs then all stay cached), so memory does not grow with the
number of events: the model, the cache and the runs in flight. gzip uses level 1 (~190 MB/s).
"""

from __future__ import annotations

import bisect
import functools
import datetime as dt
import gzip
import hashlib
import heapq
import json
import os
import random
import re
import uuid
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

__all__ = ["PlatformStats", "generate", "iter_events", "iter_lines", "day_counts", "default_jobs"]

_J = json.JSONEncoder(separators=(",", ":")).encode

DAY_US = 86_400_000_000
_LAST_START_US = DAY_US - 120_000_000  # ordinary runs start at least 2 minutes before midnight
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
_FACET = "https://openlineage.io/spec/facets/"
_URL = {
    "schema": _FACET + "1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet",
    "dataSource": _FACET + "1-0-1/DatasourceDatasetFacet.json#/$defs/DatasourceDatasetFacet",
    "symlinks": _FACET + "1-0-1/SymlinksDatasetFacet.json#/$defs/SymlinksDatasetFacet",
    "columnLineage": _FACET + "1-2-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet",
    "outputStatistics": _FACET + "1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet",
    "version": _FACET + "1-0-1/DatasetVersionDatasetFacet.json#/$defs/DatasetVersionDatasetFacet",
    "lifecycleStateChange": _FACET + "1-0-1/LifecycleStateChangeDatasetFacet.json#/$defs/LifecycleStateChangeDatasetFacet",
    "jobType": _FACET + "2-0-3/JobTypeJobFacet.json#/$defs/JobTypeJobFacet",
    "sourceCodeLocation": _FACET + "1-0-1/SourceCodeLocationJobFacet.json#/$defs/SourceCodeLocationJobFacet",
    "sql": _FACET + "1-1-0/SQLJobFacet.json#/$defs/SQLJobFacet",
    "ownership": _FACET + "1-0-1/OwnershipJobFacet.json#/$defs/OwnershipJobFacet",
    "documentation": _FACET + "1-0-1/DocumentationJobFacet.json#/$defs/DocumentationJobFacet",
    "parent": _FACET + "1-1-0/ParentRunFacet.json#/$defs/ParentRunFacet",
    "nominalTime": _FACET + "1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet",
    "errorMessage": _FACET + "1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet",
    "processing_engine": _FACET + "1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet",
    "custom": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet",
}

# ---------------------------------------------------------------- producers
SPARK, AIRFLOW, DBT, PYTHON = range(4)
PRODUCER_URL = (
    "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark",
    "https://github.com/apache/airflow/tree/providers-openlineage/1.14.0",
    "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/dbt",
    "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/client/python",
)
_JOB_NS = ("spark-prod", "airflow-prod", "dbt-prod", "python-jobs")
_INTEGRATION = (("SPARK", "JOB"), ("AIRFLOW", "TASK"), ("DBT", "MODEL"), ("PYTHON", "JOB"))
_REPO = ("acme/spark-etl", "acme/airflow-dags", "acme/dbt-analytics", "acme/data-loaders")
_MS_PRECISION = (True, False, True, False)  # JVM/dbt clients print milliseconds, Python microseconds
_PRODUCER_SHARE = (SPARK,) * 40 + (AIRFLOW,) * 20 + (DBT,) * 25 + (PYTHON,) * 15
_ERRORS_OF = ((0,), (1, 3), (2,), (3, 1))  # producer -> the failures it reports (indices into _ERRORS)
_ERRORS = (
    ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 17 in stage 4.0 failed 4 times",
     "JAVA", "org.apache.spark.SparkException: Job aborted due to stage failure\n\tat org.apache.spark.scheduler."
     "DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n\tat org.apache.spark.scheduler.DAGScheduler"
     ".$anonfun$abortStage$2(DAGScheduler.scala:2792)\nCaused by: java.io.IOException: No space left on device"),
    ("airflow.exceptions.AirflowTaskTimeout: Timeout, PID: 4711", "PYTHON",
     "Traceback (most recent call last):\n  File \"/opt/airflow/dags/common/load.py\", line 88, in execute\n"
     "    cursor.execute(sql)\nairflow.exceptions.AirflowTaskTimeout: Timeout, PID: 4711"),
    ("Database Error in model: Division by zero", "SQL",
     "Database Error\n  100051 (22012): Division by zero\n  compiled Code at target/run/models/marts.sql"),
    ("psycopg2.OperationalError: server closed the connection unexpectedly", "PYTHON",
     "Traceback (most recent call last):\n  File \"/app/loaders/base.py\", line 142, in extract\n"
     "    rows = cur.fetchmany(10000)\npsycopg2.OperationalError: server closed the connection unexpectedly"),
)

# ---------------------------------------------------------------- systems
PG_ORDERS, PG_CRM, PG_BILLING, PG_INVENTORY, KAFKA, LANDING, RAW, CURATED, BIGQUERY, SNOWFLAKE = range(10)
SYSTEM_NAMESPACE = (
    "postgres://orders-db.prod:5432",
    "postgres://crm-db.prod:5432",
    "postgres://billing-db.prod:5432",
    "postgres://inventory-db.prod:5432",
    "kafka://broker:9092",
    "s3://lake-landing",
    "s3://lake-raw",
    "s3://lake-curated",
    "bigquery",
    "snowflake://acme.eu-west-1",
)
_PG_DB = {PG_ORDERS: "orders", PG_CRM: "crm", PG_BILLING: "billing", PG_INVENTORY: "inventory"}
_LAKES = (LANDING, RAW, CURATED)
METASTORE = "hive://metastore.prod:9083"  # where the Spark listener's symlinks name lake tables


def metastore_table(path: str) -> str:
    """The metastore table of a lake path: `curated/catalog/dim_products` -> `curated_catalog.dim_products`."""
    folder, _, table = path.rpartition("/")
    return f"{folder.replace('/', '_')}.{table}" if folder else table
_PARTNERS = ("shopify", "stripe", "zendesk", "salesforce", "hubspot", "netsuite")

# ---------------------------------------------------------------- vocabulary
# name|type|description ("(PII)" marks personal data); struct<...> types become nested fields.
_FIELD_SPECS = """
customer_id|bigint|Surrogate key of the customer
order_id|bigint|Order identifier from the order service
order_item_id|bigint|
product_id|bigint|Catalog product identifier
sku|string|Stock keeping unit
store_id|int|
warehouse_id|int|Fulfilment warehouse
supplier_id|bigint|
payment_id|string|Payment provider reference
invoice_id|bigint|
shipment_id|string|
carrier_id|int|
campaign_id|bigint|
session_id|string|Web session identifier
event_id|string|Client-generated event identifier
ticket_id|bigint|
agent_id|int|
account_id|bigint|
device_id|string|
entry_id|bigint|
created_at|timestamp|Row creation time (UTC)
updated_at|timestamp|Last update time (UTC)
country_code|string|ISO 3166-1 alpha-2 country code
currency|string|ISO 4217 currency code
status|string|
is_deleted|boolean|Soft-delete flag
order_ts|timestamp|Time the order was placed
channel|string|Sales channel: web, app, store or marketplace
order_total|decimal(18,2)|Order total incl. tax, in order currency
subtotal|decimal(18,2)|
discount_amount|decimal(18,2)|
tax_amount|decimal(18,2)|
shipping_amount|decimal(18,2)|
quantity|int|
unit_price|decimal(10,2)|
coupon_code|string|
shipping_address|struct<street:string,city:string,postal_code:string,country_code:string>|Delivery address (PII)
items_count|int|
is_first_order|boolean|
email|string|Primary e-mail address (PII)
phone|string|Phone number in E.164 format (PII)
first_name|string|(PII)
last_name|string|(PII)
birth_date|date|(PII)
signup_ts|timestamp|
loyalty_tier|string|bronze, silver, gold or platinum
marketing_opt_in|boolean|
preferred_language|string|
billing_address|struct<street:string,city:string,postal_code:string,country_code:string>|
customer_segment|string|
contact|struct<email:string,phone:string,preferred_channel:string>|Contact details (PII)
amount|decimal(18,2)|Amount in payment currency
payment_method|struct<type:string,brand:string,last4:string>|
payment_status|string|
authorized_at|timestamp|
captured_at|timestamp|
refunded_amount|decimal(18,2)|
fee_amount|decimal(10,2)|Provider fee
provider|string|
risk_score|double|Fraud risk score in [0, 1]
settlement_date|date|
product_name|string|
category|string|
subcategory|string|
brand|string|
list_price|decimal(10,2)|Current list price
cost_price|decimal(10,2)|
weight_kg|double|
dimensions|struct<length_cm:double,width_cm:double,height_cm:double>|
is_active|boolean|
launched_at|timestamp|
tags|array<string>|
rating|double|Average review rating (1-5)
review_count|int|
quantity_on_hand|int|
quantity_reserved|int|
reorder_point|int|
snapshot_ts|timestamp|
bin_location|string|
lot_number|string|
expiry_date|date|
movement_type|string|
unit_cost|decimal(18,4)|
shipped_at|timestamp|
delivered_at|timestamp|
tracking_number|string|
shipping_method|string|
delivery_status|string|
package_count|int|
shipping_cost|decimal(10,2)|
destination|struct<city:string,postal_code:string,country_code:string>|
delay_minutes|int|
is_returned|boolean|
return_reason|string|
campaign_name|string|
utm|struct<source:string,medium:string,campaign:string,content:string>|UTM parameters of the landing URL
impressions|bigint|
clicks|bigint|
spend|decimal(18,2)|Media spend in EUR
conversions|int|
click_ts|timestamp|
ad_group|string|
opened_at|timestamp|
promotion_code|string|
event_ts|timestamp|Client event time
event_name|string|
page_url|string|
referrer_url|string|
device|struct<os:string,os_version:string,browser:string,model:string>|
geo|struct<country_code:string,region:string,city:string,latitude:double,longitude:double>|IP-derived location
duration_ms|bigint|
is_bot|boolean|
search_query|string|
app_version|string|
ip_address|string|Client IP address (PII)
subject|string|
priority|string|
opened_ts|timestamp|
resolved_ts|timestamp|
first_response_minutes|int|
csat_score|int|Customer satisfaction score (1-5)
sla_breached|boolean|
posting_date|date|
gl_account|string|General ledger account
debit_amount|decimal(18,2)|
credit_amount|decimal(18,2)|
cost_center|string|
fiscal_period|string|
fx_rate|decimal(18,8)|
rate_date|date|
base_currency|string|
quote_currency|string|
budget_amount|decimal(18,2)|
reading_ts|timestamp|
sensor_type|string|
reading_value|double|
battery_level|double|
firmware_version|string|
location|struct<site:string,zone:string,latitude:double,longitude:double>|
is_anomaly|boolean|
temperature_c|double|
pricing|struct<list_price:decimal(10,2),discount_pct:double,final_price:decimal(10,2)>|Price breakdown of the line
preferences|struct<newsletter:boolean,sms:boolean,language:string>|
risk|struct<score:double,decision:string,rules_hit:array<string>>|Fraud screening result
seo|struct<title:string,slug:string,keywords:string>|
storage|struct<aisle:string,shelf:string,bin:string>|
batch|struct<lot_number:string,expiry_date:date,received_at:timestamp>|
package|struct<weight_kg:double,length_cm:double,width_cm:double,height_cm:double>|
audience|struct<segment:string,size:bigint,lookalike:boolean>|
experiment|struct<id:string,variant:string>|A/B test assignment
requester|struct<name:string,email:string,locale:string>|Who opened the ticket (PII)
sla|struct<policy:string,due_at:timestamp,breached:boolean>|
amounts|struct<net:decimal(18,2),tax:decimal(18,2),gross:decimal(18,2)>|
counterparty|struct<name:string,vat_id:string,country_code:string>|
firmware|struct<version:string,channel:string,installed_at:timestamp>|
"""

_META_SPECS = """
_ingested_at|timestamp|Time the loader wrote the row
_cdc_op|string|Change-data-capture operation (c, u, d)
_cdc_lsn|string|
_kafka_partition|int|
_kafka_offset|bigint|
_source_file|string|Landing file the row came from
_loaded_at|timestamp|Load time of this row
_batch_id|string|
"""

# domain, source system, entities (name, key field), fields, foreign keys
_DOMAINS = (
    ("sales", PG_ORDERS, (("orders", "order_id"), ("order_items", "order_item_id"), ("carts", "session_id"), ("refunds", "order_id"), ("stores", "store_id")),
     "order_ts channel order_total subtotal discount_amount tax_amount shipping_amount quantity unit_price coupon_code "
     "shipping_address items_count is_first_order pricing status currency country_code created_at updated_at", "customer_id product_id store_id"),
    ("customers", PG_CRM, (("customers", "customer_id"), ("accounts", "account_id"), ("addresses", "customer_id"), ("consents", "customer_id")),
     "email phone first_name last_name birth_date signup_ts loyalty_tier marketing_opt_in preferred_language billing_address "
     "customer_segment contact preferences country_code status created_at updated_at is_deleted", "account_id"),
    ("payments", PG_BILLING, (("payments", "payment_id"), ("invoices", "invoice_id"), ("payouts", "payment_id"), ("chargebacks", "payment_id")),
     "amount payment_method payment_status authorized_at captured_at refunded_amount fee_amount provider risk_score "
     "settlement_date risk currency country_code created_at updated_at", "order_id customer_id"),
    ("catalog", PG_INVENTORY, (("products", "product_id"), ("product_prices", "sku"), ("suppliers", "supplier_id"), ("reviews", "product_id")),
     "sku product_name category subcategory brand list_price cost_price weight_kg dimensions is_active launched_at tags "
     "rating review_count seo currency created_at updated_at", "supplier_id"),
    ("inventory", PG_INVENTORY, (("stock_levels", "sku"), ("stock_movements", "sku"), ("warehouses", "warehouse_id"), ("purchase_orders", "supplier_id")),
     "quantity_on_hand quantity_reserved reorder_point snapshot_ts bin_location lot_number expiry_date movement_type "
     "unit_cost quantity storage batch created_at updated_at", "product_id warehouse_id supplier_id"),
    ("logistics", PG_ORDERS, (("shipments", "shipment_id"), ("deliveries", "shipment_id"), ("carriers", "carrier_id"), ("returns", "order_id")),
     "shipped_at delivered_at tracking_number shipping_method delivery_status package_count shipping_cost destination "
     "delay_minutes is_returned return_reason package status created_at updated_at", "order_id carrier_id warehouse_id customer_id"),
    ("marketing", PG_CRM, (("campaigns", "campaign_id"), ("ad_clicks", "event_id"), ("email_sends", "event_id"), ("promotions", "campaign_id")),
     "campaign_name utm impressions clicks spend conversions click_ts ad_group opened_at promotion_code channel "
     "audience country_code created_at", "customer_id campaign_id"),
    ("web", KAFKA, (("page_views", "event_id"), ("sessions", "session_id"), ("searches", "event_id"), ("app_events", "event_id")),
     "event_ts event_name page_url referrer_url device geo duration_ms is_bot search_query app_version ip_address "
     "experiment country_code", "session_id customer_id product_id"),
    ("support", PG_CRM, (("tickets", "ticket_id"), ("ticket_comments", "ticket_id"), ("agents", "agent_id"), ("surveys", "ticket_id")),
     "subject priority status opened_ts resolved_ts first_response_minutes csat_score sla_breached channel category "
     "requester sla created_at updated_at", "customer_id agent_id order_id"),
    ("finance", PG_BILLING, (("ledger_entries", "entry_id"), ("fx_rates", "rate_date"), ("budgets", "cost_center"), ("accounts_payable", "invoice_id")),
     "posting_date gl_account debit_amount credit_amount cost_center fiscal_period fx_rate rate_date base_currency "
     "quote_currency budget_amount amounts counterparty currency created_at", "invoice_id supplier_id"),
    ("iot", KAFKA, (("sensor_readings", "device_id"), ("devices", "device_id"), ("alerts", "event_id")),
     "reading_ts sensor_type reading_value battery_level firmware_version firmware location is_anomaly temperature_c created_at",
     "warehouse_id"),
)
_DOMAIN_INDEX = {d[0]: i for i, d in enumerate(_DOMAINS)}
# (domain, entity, hub table, weight): the shared dimensions many jobs join
_CORE_HUBS = (("customers", "customers", "dim_customers", 12.0), ("catalog", "products", "dim_products", 6.0),
              ("finance", "fx_rates", "dim_fx_rates", 3.0), ("sales", "stores", "dim_stores", 2.0))
_SUFFIXES = ("", "_daily", "_enriched", "_by_country", "_by_channel", "_snapshot", "_weekly", "_latest", "_history",
             "_summary", "_hourly", "_eu", "_us", "_clean")
# table prefixes and warehouse schemas by layer (layer 0 transformations are dbt staging models)
_PREFIXES = (("stg",), ("int", "base", "stg"), ("fct", "dim", "int"), ("agg", "rpt", "mart", "fct"))
_SCHEMAS = ("staging", "intermediate", "marts", "marts")
# what a table name adds to its entity: a layer prefix, suffixes, uniqueness numbers
_TABLE_DECORATION = re.compile(r"^(?:(?:raw|stg|int|base|fct|dim|agg|rpt|mart)_)+|(?:" + "|".join(x for x in _SUFFIXES if x)
                               + r"|_v?\d+)+$")
_SPARK_VERBS = ("execute_insert_into_hadoop_fs_relation_command", "append_data", "overwrite_by_expression",
                "execute_create_table_as_select_command", "execute_save_into_data_source_command")
_FILTER_FIELDS = ("is_deleted", "status", "order_status", "payment_status", "is_bot", "is_active", "delivery_status",
                  "updated_at", "event_ts", "created_at")
_HOURLY_PROFILE = (6, 8, 9, 9, 8, 6, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 5)  # nightly batch peak (UTC)

BASE, DERIVED, META = 0, 1, 2
_PLAIN = re.compile(r"[A-Za-z0-9_./:=-]+")  # names spliced into JSON text without escaping
_DERIVABLE = {"num", "id", "ts", "date", "pii", "str", "bool"}


@functools.lru_cache(maxsize=4096)
def _transformations(kind: str, subtype: str, description: str = "", masking: bool = False) -> str:
    return _J([{"type": kind, "subtype": subtype, "description": description, "masking": masking}])


_T_IDENTITY = _transformations("DIRECT", "IDENTITY")
_T_PARSE = _transformations("DIRECT", "TRANSFORMATION", "from_json(cast(value as string))")
_T_COALESCE = _transformations("DIRECT", "TRANSFORMATION", "coalesce")


class _Fields:
    """The platform's field pool: one shared entry (dict text, name, type, category) per field."""

    def __init__(self) -> None:
        self.name: list[str] = []
        self.name_json: list[str] = []
        self.text: list[str] = []
        self.category: list[str] = []
        self.type: list[str] = []
        self.kind = bytearray()
        self.source: list[str | None] = []  # derived: the input field it is computed from
        self.expression: list[str | None] = []  # derived: SQL template, {0} is the source column
        self.transformations: list[str | None] = []  # derived: ',"transformations":[...]}' (closes the ref)
        self.source_json: list[str | None] = []
        self.by_name: dict[str, int] = {}
        self._derived: dict[tuple[str, str], int] = {}
        for line in _FIELD_SPECS.strip().splitlines():
            self._add_spec(line, BASE)
        for line in _META_SPECS.strip().splitlines():
            self._add_spec(line, META)

    def _add(self, field: dict, category: str, kind: int, source=None, expression=None, transformations=None) -> int:
        self.name.append(field["name"])
        self.name_json.append(_J(field["name"]))
        self.text.append(_J(field))
        self.category.append(category)
        self.type.append(field["type"])
        self.kind.append(kind)
        self.source.append(source)
        self.expression.append(expression)
        self.transformations.append(None if transformations is None else ',"transformations":' + transformations + "}")
        self.source_json.append(None if source is None else _J(source))
        return len(self.name) - 1

    def _add_spec(self, line: str, kind: int) -> None:
        name, kind_text, description = line.split("|")
        field: dict = {"name": name}
        if kind_text.startswith("struct<"):
            field["type"] = "struct"
            category = "struct"
        else:
            field["type"] = kind_text
            category = _category(name, kind_text, description)
        if description:
            field["description"] = description
        if category == "struct":
            field["fields"] = [{"name": n, "type": t} for n, t in re.findall(r"(\w+):(\w+(?:\([^)]*\)|<[^>]*>)?)", kind_text[7:-1])]
        self.by_name[name] = self._add(field, category, kind)

    def derive(self, source: int, rng: random.Random) -> int | None:
        """A derived field computed from field `source` (shared entry per (op, source))."""
        category = self.category[source]
        if self.kind[source] != BASE or category not in _DERIVABLE:
            return None
        name = self.name[source]
        stem = name[:-3] if name.endswith(("_id", "_ts", "_at")) else name
        options = {
            "num": (("total_" + name, "decimal(38,2)" if "decimal" in self.type[source] else "bigint", "AGGREGATION", "sum({0})"),
                    ("avg_" + name, "double", "AGGREGATION", "avg({0})"),
                    ("max_" + name, self.type[source], "AGGREGATION", "max({0})")),
            "id": ((stem + "_count", "bigint", "AGGREGATION", "count(distinct {0})"),),
            "ts": ((stem + "_date", "date", "TRANSFORMATION", "cast({0} as date)"),
                   ("first_" + name, "timestamp", "AGGREGATION", "min({0})"),
                   ("last_" + name, "timestamp", "AGGREGATION", "max({0})")),
            "date": (((name[:-5] if name.endswith("_date") else name) + "_month", "string", "TRANSFORMATION",
                      "date_format({0}, 'yyyy-MM')"),),
            "pii": ((name + "_sha256", "string", "TRANSFORMATION", "sha2({0}, 256)"),
                    (name + "_masked", "string", "TRANSFORMATION", "regexp_replace({0}, '.', '*')")),
            "str": ((name + "_normalized", "string", "TRANSFORMATION", "lower(trim({0}))"),
                    (name + "_distinct_count", "bigint", "AGGREGATION", "count(distinct {0})")),
            "bool": ((name + "_rate", "double", "AGGREGATION", "avg(cast({0} as int))"),),
        }[category]
        new_name, new_type, subtype, expression = rng.choice(options)
        key = (new_name, name)
        if key in self._derived:
            return self._derived[key]
        field: dict = {"name": new_name, "type": new_type}
        if subtype == "AGGREGATION":
            field["description"] = expression.format(name)
        transformations = _transformations("DIRECT", subtype, expression.format(name), category == "pii")
        index = self._add(field, "derived", DERIVED, name, expression, transformations)
        self._derived[key] = index
        return index


def _category(name: str, kind: str, description: str) -> str:
    if "(PII)" in description and kind == "string":
        return "pii"
    if name.endswith("_id") or name == "sku":
        return "id"
    if kind == "timestamp":
        return "ts"
    if kind == "date":
        return "date"
    if kind == "boolean":
        return "bool"
    if kind.startswith(("decimal", "double", "int", "bigint")):
        return "num"
    if kind.startswith("array"):
        return "array"
    return "str"


# ---------------------------------------------------------------- the platform model


class _Platform:
    """Jobs and datasets as compact arrays; everything random is decided here, once."""

    def __init__(self, rng: random.Random, n_jobs: int) -> None:
        self.rng = rng
        self.fields = _Fields()
        # datasets
        self.ds_system = bytearray()
        self.ds_name: list[str] = []
        self.ds_fields: list[tuple[int, ...]] = []
        self.ds_flags = bytearray()  # 1 versioned (Delta), 2 overwritten every run, 4 created in this stream
        self._names: set[tuple[int, str]] = set()
        # jobs
        self.job_name: list[str] = []
        self._job_names: set[str] = set()
        self.job_producer = bytearray()
        self.job_pipeline = array("i")
        self.job_inputs: list[tuple[int, ...]] = []
        self.job_outputs: list[tuple[int, ...]] = []
        self.job_flags = bytearray()  # 1 ingestion, 2 filter lineage, 4 parent facet, 8 ownership facet
        self.job_seconds = array("I")
        self.pipeline_name: list[str] = []
        self.pipeline_warehouse = bytearray()
        # reading pools
        self.by_domain: list[list[int]] = [[] for _ in _DOMAINS]
        self.raw_by_domain: list[list[int]] = [[] for _ in _DOMAINS]
        self.all_tables: list[int] = []
        self.hubs: list[int] = []
        self.hub_cum: list[float] = []
        self._build(n_jobs)
        weights = [rng.choice((1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 6.0, 24.0)) for _ in range(n_jobs)]
        self.cum_weights = array("d")
        total = 0.0
        for w in weights:
            total += w
            self.cum_weights.append(total)

    # -- datasets
    def _unique(self, system: int, name: str, upper: bool = False, variant=None) -> str:
        """`name`, else variant(n) (default: a numeric suffix) for the first n = 2, 3, ... not yet taken."""
        candidate, n = name, 1
        while True:
            text = candidate.upper() if upper else candidate
            if (system, text) not in self._names:
                self._names.add((system, text))
                return text
            n += 1
            if variant is not None:
                candidate = variant(n)
            else:
                candidate = f"{name}_v{n}" if system in _LAKES else f"{name}_{n}"

    def _dataset(self, system: int, name: str, fields: list[int], flags: int = 0) -> int:
        assert _PLAIN.fullmatch(name), name
        self.ds_system.append(system)
        self.ds_name.append(name)
        self.ds_fields.append(tuple(fields))
        self.ds_flags.append(flags)
        return len(self.ds_name) - 1

    def _source(self, domain: int, entity: int, producer: int) -> int:
        rng = self.rng
        dname, pg, entities, pool, fks = _DOMAINS[domain]
        ename, key = entities[entity]
        if pg == KAFKA or (producer == PYTHON and rng.random() < 0.5):
            system, name = KAFKA, self._unique(KAFKA, f"{dname}.{ename}.v1")
        elif producer == AIRFLOW and rng.random() < 0.4:
            system = LANDING
            name = self._unique(LANDING, f"incoming/{rng.choice(_PARTNERS)}/{ename}")
        else:
            system, db = pg, _PG_DB[pg]
            name = self._unique(pg, f"{db}.public.{ename}", variant=lambda n: f"{db}.tenant_{n - 1:03d}.{ename}")
        by_name = self.fields.by_name
        chosen = [by_name[key]]
        candidates = [by_name[f] for f in fks.split() if f != key] + [by_name[f] for f in pool.split() if f != key]
        want = rng.randint(5, 17)
        first = [c for c in candidates[: len(fks.split())] if rng.random() < 0.7]
        rest = [c for c in candidates if c not in first]
        chosen += first[: want - 1]
        chosen += rng.sample(rest, min(len(rest), max(0, want - len(chosen))))
        structs = [c for c in rest if self.fields.category[c] == "struct" and c not in chosen]
        if structs and rng.random() < 0.55:  # most source tables carry a nested record (~10% of all fields)
            chosen[-1 if len(chosen) > 1 else len(chosen):] = [rng.choice(structs)]
        return self._dataset(system, name, chosen)

    def _output_fields(self, inputs: tuple[int, ...]) -> list[int]:
        rng, pool = self.rng, self.fields
        chosen: list[int] = []
        names: set[str] = set()

        def add(index: int | None) -> None:
            if index is not None and pool.name[index] not in names and len(chosen) < 20:
                names.add(pool.name[index])
                chosen.append(index)

        usable = [[i for i in self.ds_fields[d] if pool.kind[i] != META] for d in inputs]
        primary = usable[0]
        add(primary[0])
        for i in rng.sample(primary[1:], min(len(primary) - 1, rng.randint(3, 10))):
            add(i)
        for i in primary:  # nested records are usually carried through
            if pool.category[i] == "struct" and rng.random() < 0.5:
                add(i)
        for fields in usable[1:]:
            for i in rng.sample(fields, min(len(fields), rng.randint(1, 3))):
                add(i)
        sources = [i for fields in usable for i in fields if pool.kind[i] == BASE and pool.category[i] in _DERIVABLE]
        if sources:
            for _ in range(rng.randint(1, 4)):
                add(pool.derive(rng.choice(sources), rng))
        if rng.random() < 0.5:
            add(pool.by_name[rng.choice(("_loaded_at", "_batch_id"))])
        spare = [i for fields in usable for i in fields if pool.name[i] not in names]
        attempts = 0
        while len(chosen) < 5:
            attempts += 1
            if spare:
                add(spare.pop(0))
            elif sources and attempts < 20:
                add(pool.derive(rng.choice(sources), rng))
            else:
                for meta in ("_loaded_at", "_batch_id", "_ingested_at", "_source_file", "_cdc_lsn", "_cdc_op"):
                    add(pool.by_name[meta])
        return chosen

    def _table(self, producer: int, warehouse: int, domain: int, layer: int, entity: str, table: str | None = None,
               ingest: bool = False) -> tuple[int, str]:
        rng = self.rng
        dname = _DOMAINS[domain][0]
        if table is None and not ingest:
            table = f"{rng.choice(_PREFIXES[min(layer, 3)])}_{entity}{rng.choice(_SUFFIXES)}"
        if ingest:
            if producer in (SPARK, PYTHON):
                return RAW, self._unique(RAW, f"raw/{dname}/{entity}")
            if warehouse == BIGQUERY:
                return BIGQUERY, self._unique(BIGQUERY, f"acme-prod.raw_{dname}.{entity}")
            return SNOWFLAKE, self._unique(SNOWFLAKE, f"raw.{dname}.{entity}", upper=True)
        if producer == SPARK or (producer == PYTHON and rng.random() < 0.6):
            return CURATED, self._unique(CURATED, f"curated/{dname}/{table}")
        schema = _SCHEMAS[min(layer, 3)]
        if warehouse == BIGQUERY:
            return BIGQUERY, self._unique(BIGQUERY, f"acme-prod.{dname}_{schema}.{table}")
        return SNOWFLAKE, self._unique(SNOWFLAKE, f"analytics.{schema}.{table}", upper=True)

    def _pick(self, pool: list[int], exclude: list[int]) -> int | None:
        for _ in range(6):
            d = self.rng.choice(pool)
            if d not in exclude:
                return d
        return None

    # -- jobs
    def _job(self, pipeline: int, producer: int, layer: int, inputs: tuple[int, ...], outputs: tuple[int, ...], flags: int) -> None:
        rng = self.rng
        pname = self.pipeline_name[pipeline]
        target = self.ds_name[outputs[0]].split("/")[-1].split(".")[-1].lower()
        if producer == SPARK:
            token = SYSTEM_NAMESPACE[self.ds_system[outputs[0]]].split("://")[-1].replace("-", "_")
            name = f"{pname}.{rng.choice(_SPARK_VERBS)}.{token}_{target}"
        elif producer == AIRFLOW:
            name = f"{pname}.{'extract_load' if flags & 1 else 'transform'}_{target}"
        elif producer == DBT:
            name = f"dbt_acme.{_SCHEMAS[min(layer, 3)]}.{target}"
        else:
            name = f"{pname}.{'load' if flags & 1 else 'build'}_{target}"
        unique, n = name, 1
        while unique in self._job_names:
            n += 1
            unique = f"{name}_{n}"
        name = unique
        assert _PLAIN.fullmatch(name) and _PLAIN.fullmatch(pname), name
        self._job_names.add(name)
        if rng.random() < 0.3:
            flags |= 8
        if (producer == AIRFLOW) or (producer == SPARK and rng.random() < 0.15):
            flags |= 4
        if len(inputs) > 1 or rng.random() < 0.35:
            flags |= 2 if rng.random() < 0.5 else 0
        self.job_name.append(name)
        self.job_producer.append(producer)
        self.job_pipeline.append(pipeline)
        self.job_inputs.append(inputs)
        self.job_outputs.append(outputs)
        self.job_flags.append(flags)
        self.job_seconds.append(int(min(5400, max(15, rng.lognormvariate(5.0, 0.9) * (0.5 if flags & 1 else 1.0)))))

    def _hub(self, d: int, weight: float) -> None:
        self.hubs.append(d)
        self.hub_cum.append((self.hub_cum[-1] if self.hub_cum else 0.0) + weight)

    def _register(self, d: int, domain: int, raw: bool) -> None:
        self.by_domain[domain].append(d)
        self.all_tables.append(d)
        if raw:
            self.raw_by_domain[domain].append(d)

    def _output_flags(self, system: int) -> int:
        rng = self.rng
        flags = 1 if system == CURATED and rng.random() < 0.7 else 0
        if rng.random() < 0.25:
            flags |= 2
        elif rng.random() < 0.03:
            flags |= 4
        return flags

    def _ingestion(self, pipeline: int, producer: int, domain: int, entity: int | None = None) -> int:
        rng = self.rng
        if entity is None:
            entity = rng.randrange(len(_DOMAINS[domain][2]))
        source = self._source(domain, entity, producer)
        meta_names = {KAFKA: ("_kafka_partition", "_kafka_offset", "_ingested_at"), LANDING: ("_source_file", "_ingested_at")}.get(
            self.ds_system[source], ("_cdc_op", "_cdc_lsn", "_ingested_at"))
        fields = list(self.ds_fields[source])
        room = 20 - len(fields)
        fields += [self.fields.by_name[m] for m in meta_names[: max(1, min(room, rng.randint(1, len(meta_names))))]]
        system, name = self._table(producer, self.pipeline_warehouse[pipeline], domain, 0, _DOMAINS[domain][2][entity][0],
                                   ingest=True)
        out = self._dataset(system, name, fields[:20], self._output_flags(system))
        self._job(pipeline, producer, 0, (source,), (out,), 1)
        self._register(out, domain, True)
        return out

    def _build(self, n_jobs: int) -> None:
        rng = self.rng
        n_core = min(len(_CORE_HUBS), n_jobs // 12)
        while len(self.job_name) < n_jobs:
            p = len(self.pipeline_name)
            left = n_jobs - len(self.job_name)
            if p < n_core:
                producer, (dname, ename, hub, weight) = SPARK, _CORE_HUBS[p]
                domain = _DOMAIN_INDEX[dname]
            else:
                producer = SPARK if p == 0 else rng.choice(_PRODUCER_SHARE)
                domain = rng.randrange(len(_DOMAINS))
                if producer == DBT and not self.all_tables:
                    producer = SPARK
            self.pipeline_name.append(f"{_DOMAINS[domain][0]}_{rng.choice(('etl', 'daily', 'sync', 'pipeline', 'load', 'model', 'refresh'))}_{p:04d}")
            self.pipeline_warehouse.append(rng.choice((BIGQUERY, SNOWFLAKE)))
            if p < n_core:  # ingest the entity, build the hub dimension
                entities = [e for e, _ in _DOMAINS[domain][2]]
                raw = self._ingestion(p, producer, domain, entities.index(ename))
                fields = self._output_fields((raw,))
                system, name = self._table(SPARK, 0, domain, 2, ename, hub)
                out = self._dataset(system, name, fields, self._output_flags(system))
                self._job(p, producer, 2, (raw,), (out,), 0)
                self._register(out, domain, False)
                self._hub(out, weight)
                continue
            size = min(left, rng.randint(3, 30))
            n_layers = min(size, rng.randint(2, 5))
            first = max(1, min(size - (n_layers - 1), round(size * rng.uniform(0.2, 0.4))))
            written: list[tuple[int, int]] = []  # (layer, dataset) of this pipeline
            for i in range(size):
                if i < first:
                    layer = 0
                else:
                    layer = 1 + (i - first) * (n_layers - 1) // max(1, size - first)
                if layer == 0 and producer != DBT:
                    written.append((0, self._ingestion(p, producer, domain)))
                    continue
                self._transformation(p, producer, domain, max(layer, 1) if producer != DBT else layer, written)

    def _transformation(self, p: int, producer: int, domain: int, layer: int, written: list[tuple[int, int]]) -> None:
        rng = self.rng
        earlier = [d for lay, d in written if lay < layer]
        if layer == 0:  # a dbt staging model over a raw table
            pool = self.raw_by_domain[domain] or [d for lst in self.raw_by_domain for d in lst] or self.all_tables
            inputs = [rng.choice(pool)]
        else:
            if earlier and rng.random() < 0.85:
                inputs = [rng.choice(earlier)]
            else:
                inputs = [rng.choice(self.by_domain[domain] or self.all_tables)]
            for _ in range(rng.choices((0, 1, 2, 3), (30, 40, 20, 10))[0]):
                r = rng.random()
                if self.hubs and r < 0.4:
                    h = bisect.bisect_right(self.hub_cum, rng.random() * self.hub_cum[-1])
                    d = self.hubs[min(h, len(self.hubs) - 1)]
                    d = d if d not in inputs else None
                elif earlier and r < 0.75:
                    d = self._pick(earlier, inputs)
                else:
                    d = self._pick(self.all_tables, inputs)
                if d is not None:
                    inputs.append(d)
        inputs_t = tuple(inputs)
        entity = _TABLE_DECORATION.sub("", self.ds_name[inputs[0]].replace("/", ".").split(".")[-1].lower())[:40]
        outputs = []
        for k in range(1 if rng.random() < 0.8 else 2):
            fields = self._output_fields(inputs_t)
            system, name = self._table(producer, self.pipeline_warehouse[p], domain, layer, entity)
            out = self._dataset(system, name, fields, self._output_flags(system))
            outputs.append(out)
            written.append((layer, out))
            self._register(out, domain, False)
            if name.split("/")[-1].split(".")[-1].lower().startswith("dim_") and rng.random() < 0.5:
                self._hub(out, 1.0)
        self._job(p, producer, layer, inputs_t, tuple(outputs), 0)


def _accumulate(values: list[float]) -> Iterator[float]:
    total = 0.0
    for v in values:
        total += v
        yield total


# ---------------------------------------------------------------- static text of a job


class _Entry:
    """A job's static JSON fragments for one code version."""

    __slots__ = ("job", "inputs", "outputs", "edges", "run_static", "size")


def _facet_head(name: str, producer: int) -> str:
    return '{"_producer":' + _J(PRODUCER_URL[producer]) + ',"_schemaURL":' + _J(_URL[name])


class _Texts:
    """Builds (and caches, within a size bound) the static fragments of jobs and datasets."""

    def __init__(self, platform: _Platform, seed: int) -> None:
        # Characters kept in the caches before they are dropped: the model costs ~1 KB per job, so a
        # small platform (whose jobs then all stay cached) gets more room than a 20,000-job one.
        self.cap = max(6_000_000, 32_000_000 - 1_200 * len(platform.job_name))
        self.platform = platform
        self.seed = seed
        self.entries: dict[tuple[int, int], _Entry] = {}
        self.datasets: dict[tuple[int, int], str] = {}
        self.size = 0
        self.data_source = [
            [f"{_facet_head('dataSource', p)},\"name\":{_J(ns)},\"uri\":{_J(ns)}}}" for ns in SYSTEM_NAMESPACE]
            for p in range(4)
        ]
        self.schema_head = [_facet_head("schema", p) + ',"fields":[' for p in range(4)]
        self.cl_head = [',"columnLineage":' + _facet_head("columnLineage", p) + ',"fields":{' for p in range(4)]
        self.job_type = [
            '"jobType":' + _facet_head("jobType", p) + f',"processingType":"BATCH","integration":"{_INTEGRATION[p][0]}",'
            f'"jobType":"{_INTEGRATION[p][1]}"}}' for p in range(4)
        ]
        self.ns_json = ['{"namespace":' + _J(ns) + "}" for ns in SYSTEM_NAMESPACE]
        self.job_ns = ['{"namespace":' + _J(ns) for ns in _JOB_NS]
        self.overwrite = [',"lifecycleStateChange":' + _facet_head("lifecycleStateChange", p) + ',"lifecycleStateChange":"OVERWRITE"}'
                          for p in range(4)]
        self.ownership = ['"ownership":' + _facet_head("ownership", p) + ',"owners":[{"name":"team:' for p in range(4)]
        self.documentation = '"documentation":' + _facet_head("documentation", DBT) + ',"description":'
        self.spark_properties = ('"spark_properties":' + _facet_head("custom", SPARK)
                                 + ',"properties":{"spark.master":"yarn","spark.app.name":"')
        self.run_static = [
            ['"processing_engine":' + _facet_head("processing_engine", SPARK) + ',"version":"3.5.3","name":"spark",'
             '"openlineageAdapterVersion":"1.23.0"}'],
            ['"processing_engine":' + _facet_head("processing_engine", AIRFLOW) + ',"version":"2.10.4","name":"Airflow",'
             '"openlineageAdapterVersion":"1.14.0"}'],
            ['"dbt_version":' + _facet_head("custom", DBT) + ',"version":"1.8.9"}'],
            ['"processing_engine":' + _facet_head("processing_engine", PYTHON) + ',"version":"3.11.11","name":"python",'
             '"openlineageAdapterVersion":"1.23.0"}'],
        ]

    def _put(self, size: int) -> None:
        self.size += size
        if self.size > self.cap:
            self.entries.clear()
            self.datasets.clear()
            self.size = size

    def dataset_open(self, d: int, producer: int) -> str:
        """`{"namespace":..,"name":..,"facets":{"dataSource":..,"schema":..` (facets left open)."""
        key = (d, producer)
        text = self.datasets.get(key)
        if text is None:
            pf = self.platform
            system = pf.ds_system[d]
            field_text = pf.fields.text
            symlinks = ""
            if producer == SPARK and system in _LAKES:  # the Spark listener names a lake path's metastore table
                symlinks = (',"symlinks":' + _facet_head("symlinks", producer) + ',"identifiers":[{"namespace":'
                            + _J(METASTORE) + ',"name":' + _J(metastore_table(pf.ds_name[d])) + ',"type":"TABLE"}]}')
            text = (
                '{"namespace":' + _J(SYSTEM_NAMESPACE[system]) + ',"name":' + _J(pf.ds_name[d]) + ',"facets":{"dataSource":'
                + self.data_source[producer][system] + symlinks + ',"schema":' + self.schema_head[producer]
                + ",".join([field_text[i] for i in pf.ds_fields[d]]) + "]}"
            )
            self._put(len(text))
            self.datasets[key] = text
        return text

    def entry(self, j: int, version: int) -> _Entry:
        key = (j, version)
        entry = self.entries.get(key)
        if entry is None:
            entry = self._build(j, version)
            self._put(entry.size)
            self.entries[key] = entry
        return entry

    def _build(self, j: int, version: int) -> _Entry:
        pf, pool = self.platform, self.platform.fields
        p = pf.job_producer[j]
        flags = pf.job_flags[j]
        inputs = pf.job_inputs[j]
        ds_fields, name_json, kind = pf.ds_fields, pool.name_json, pool.kind
        slots_of: dict[int, list[int]] = {}  # field entry -> input slots holding it
        slot_of_name: dict[str, int] = {}  # field name -> first input slot holding it
        for s, d in enumerate(inputs):
            for f in ds_fields[d]:
                slots_of.setdefault(f, []).append(s)
                slot_of_name.setdefault(pool.name[f], s)
        ref_head = [self.ns_json[pf.ds_system[d]] [:-1] + ',"name":"' + pf.ds_name[d] + '","field":' for d in inputs]
        identity = ',"transformations":' + (_T_PARSE if flags & 1 and pf.ds_system[inputs[0]] == KAFKA else _T_IDENTITY) + "}"
        coalesce = ',"transformations":' + _T_COALESCE + "}"
        want_sql = p in (DBT, AIRFLOW) and not flags & 1
        entry = _Entry()
        entry.inputs = "[" + ",".join([self.dataset_open(d, p) + "}}" for d in inputs]) + "]"
        edges = 0
        outputs = []
        select: list[str] = []  # SQL select list of the first output, for the sql facet
        aggregated = False
        for n_out, o in enumerate(pf.job_outputs[j]):
            cl_fields = []
            sql_here = want_sql and n_out == 0
            for f in ds_fields[o]:
                have = slots_of.get(f)
                if have is not None:
                    if len(have) == 1:
                        refs = ref_head[have[0]] + name_json[f] + identity
                        edges += 1
                    else:
                        refs = ",".join([ref_head[s] + name_json[f] + coalesce for s in have])
                        edges += len(have)
                    if sql_here:
                        name = pool.name[f]
                        select.append(f"t{have[0]}.{name}" if len(have) == 1
                                      else f"coalesce({', '.join(f't{s}.{name}' for s in have)}) as {name}")
                elif kind[f] == DERIVED:
                    s = slot_of_name.get(pool.source[f])
                    if s is None:
                        continue
                    refs = ref_head[s] + pool.source_json[f] + pool.transformations[f]
                    edges += 1
                    if sql_here:
                        select.append(pool.expression[f].format(f"t{s}.{pool.source[f]}") + " as " + pool.name[f])
                        aggregated = aggregated or "AGGREGATION" in pool.transformations[f]
                else:
                    if sql_here:
                        select.append(("current_timestamp()" if pool.category[f] == "ts" else "'{{ run_id }}'") + " as " + pool.name[f])
                    continue
                cl_fields.append(name_json[f] + ':{"inputFields":[' + refs + "]}")
            dataset_refs = self._dataset_lineage(j, slot_of_name, ref_head)
            edges += len(dataset_refs)
            text = (
                self.dataset_open(o, p) + self.cl_head[p] + ",".join(cl_fields) + "}"
                + (',"dataset":[' + ",".join(dataset_refs) + "]" if dataset_refs else "") + "}"
            )
            o_flags = pf.ds_flags[o]
            if o_flags & 2:
                text += self.overwrite[p]
            outputs.append((text, o_flags, o, pf.ds_system[o] in _LAKES, len(ds_fields[o])))
        entry.outputs = outputs
        entry.edges = edges
        facets = [self.job_type[p], self._source_code(j, p, version)]
        if want_sql:
            facets.append(self._sql(j, p, select, aggregated))
        if flags & 8:
            team = pf.pipeline_name[pf.job_pipeline[j]].split("_")[0]
            facets.append(self.ownership[p] + team + '-data","type":"team"}]}')
        if p == DBT:
            facets.append(self.documentation + _J(f"dbt model {pf.job_name[j]}: built from {', '.join(pf.ds_name[d] for d in inputs)}") + "}")
        entry.job = self.job_ns[p] + ',"name":"' + pf.job_name[j] + '","facets":{' + ",".join(facets) + "}}"
        entry.run_static = self.run_static[p]
        if p == SPARK:
            entry.run_static = entry.run_static + [self.spark_properties + pf.pipeline_name[pf.job_pipeline[j]] + '"}}']
        entry.size = len(entry.job) + len(entry.inputs) + sum(len(t[0]) for t in outputs) + 400
        return entry

    def _dataset_lineage(self, j: int, slot_of_name: dict[str, int], ref_head: list[str]) -> list[str]:
        """Dataset-wide INDIRECT dependencies: the join key (in every input that has it), a filter column."""
        pf, pool = self.platform, self.platform.fields
        inputs = pf.job_inputs[j]
        refs = []
        if len(inputs) > 1:
            others = [{pool.name[i] for i in pf.ds_fields[d]} for d in inputs[1:]]
            primary = [pool.name[i] for i in pf.ds_fields[inputs[0]] if pool.category[i] == "id"]
            key = next((k for k in primary if any(k in names for names in others)), None)
            if key is not None:
                t = ',"transformations":' + _transformations("INDIRECT", "JOIN", f"join on {key}") + "}"
                refs.append(ref_head[0] + '"' + key + '"' + t)
                refs += [ref_head[s] + '"' + key + '"' + t for s, names in enumerate(others, 1) if key in names]
        if pf.job_flags[j] & 2:
            first = {pool.name[i] for i in pf.ds_fields[inputs[0]]}
            column = next((c for c in _FILTER_FIELDS if c in first), None)
            if column is not None:
                t = ',"transformations":' + _transformations("INDIRECT", "FILTER", f"where {column} is not null") + "}"
                refs.append(ref_head[0] + '"' + column + '"' + t)
        return refs

    def _source_code(self, j: int, p: int, version: int) -> str:
        pf = self.platform
        sha = hashlib.sha1(f"{self.seed}/{pf.job_name[j]}/{version}".encode()).hexdigest()
        pipeline = pf.pipeline_name[pf.job_pipeline[j]]
        leaf = pf.job_name[j].split(".")[-1]
        path = (f"jobs/{pipeline}/{leaf}.py", f"dags/{pipeline}.py", f"models/{pf.job_name[j].split('.')[1]}/{leaf}.sql",
                f"loaders/{pipeline}/{leaf}.py")[p]
        return ('"sourceCodeLocation":' + _facet_head("sourceCodeLocation", p) + ',"type":"git","url":'
                + _J(f"https://github.com/{_REPO[p]}/blob/{sha}/{path}") + ',"repoUrl":' + _J(f"https://github.com/{_REPO[p]}.git")
                + ',"path":' + _J(path) + ',"version":"' + sha + '","branch":"main"}')

    def _sql(self, j: int, p: int, select: list[str], aggregated: bool) -> str:
        pf, pool = self.platform, self.platform.fields
        inputs = pf.job_inputs[j]

        def table(d: int) -> str:
            system = pf.ds_system[d]
            return f"delta.`{SYSTEM_NAMESPACE[system]}/{pf.ds_name[d]}`" if system in _LAKES else pf.ds_name[d]

        names0 = [pool.name[i] for i in pf.ds_fields[inputs[0]]]
        keys0 = [pool.name[i] for i in pf.ds_fields[inputs[0]] if pool.category[i] == "id"]
        sql = "select " + ",\n       ".join(select or ["*"]) + f"\nfrom {table(inputs[0])} as t0"
        for s, d in enumerate(inputs[1:], 1):
            names = {pool.name[i] for i in pf.ds_fields[d]}
            key = next((k for k in keys0 if k in names), None)
            sql += f"\nleft join {table(d)} as t{s} on t0.{key} = t{s}.{key}" if key else f"\ncross join {table(d)} as t{s}"
        if pf.job_flags[j] & 2:
            column = next((c for c in _FILTER_FIELDS if c in names0), None)
            if column:
                sql += f"\nwhere t0.{column} is not null"
        if aggregated:
            plain = [str(n + 1) for n, s in enumerate(select) if not any(a in s for a in ("sum(", "avg(", "min(", "max(", "count("))]
            if plain:
                sql += "\ngroup by " + ", ".join(plain)
        dialect = "snowflake" if pf.pipeline_warehouse[pf.job_pipeline[j]] == SNOWFLAKE else "bigquery"
        return '"sql":' + _facet_head("sql", p) + ',"query":' + _J(sql) + ',"dialect":"' + dialect + '"}'


# ---------------------------------------------------------------- the day plan


def day_counts(events: int, days: int) -> list[int]:
    """Events per day: as even as possible, the first days taking the remainder."""
    base, extra = divmod(events, days)
    return [base + (1 if d < extra else 0) for d in range(days)]


def default_jobs(events: int, days: int) -> int:
    """About events / (days * 6) jobs (each runs ~3 times a day), within [20, 20000]."""
    return min(20_000, max(20, events // (days * 6)))


def _feasible(counts: list[int]) -> list[tuple[bool, bool]]:
    """ok[d][c]: days d.. can be filled when c events (0/1) of day d come from a run started the day before.

    A day's own runs hold k = count - c events; they may leave the last run's terminal event to
    the next day (k >= 1), or not (k == 0 or k >= 2; runs have 2 or 3 events). Nothing may
    spill past the last day.
    """
    ok = [(False, False)] * len(counts) + [(True, False)]
    for d in reversed(range(len(counts))):
        row = []
        for c in (0, 1):
            k = counts[d] - c
            row.append(k >= 0 and (((k == 0 or k >= 2) and ok[d + 1][0]) or (k >= 1 and ok[d + 1][1])))
        ok[d] = (row[0], row[1])
    return ok


def _day_plan(events: int, days: int, rng: random.Random) -> list[tuple[int, bool]]:
    """Per day: (events of runs started that day that land on that day, whether its last run crosses midnight)."""
    counts = day_counts(events, days)
    ok = _feasible(counts)
    if not ok[0][0]:
        larger = next(n for n in range(events + 1, 2 * days + 1) if _feasible(day_counts(n, days))[0][0])
        raise ValueError(
            f"cannot spread {events} events evenly over {days} days ({'/'.join(map(str, sorted(set(counts))))} a day): "
            f"a run has 2 or 3 events (START, [RUNNING], COMPLETE/FAIL) and only a day's last run may cross midnight; "
            f"the next count that works is {larger} events (any count >= 2 * days = {2 * days} works)"
        )
    plan, carry = [], 0
    for d in range(days):
        k = counts[d] - carry
        stay = (k == 0 or k >= 2) and ok[d + 1][0]
        spill = k >= 1 and ok[d + 1][1] and (not stay or rng.random() < 0.3)
        plan.append((k, spill))
        carry = 1 if spill else 0
    return plan


# ---------------------------------------------------------------- the stream


@dataclass
class PlatformStats:
    """What a generated stream holds (all counts are of the stream, not of the model)."""

    events: int = 0
    runs: int = 0
    failed_runs: int = 0
    running_events: int = 0
    jobs: int = 0  # distinct jobs that ran
    datasets: int = 0  # distinct datasets referenced
    code_versions: int = 0  # distinct (job, sourceCodeLocation.version) pairs that ran
    column_edges: int = 0  # input field references (field-level + dataset-level) over all columnLineage facets
    bytes: int = 0  # uncompressed NDJSON bytes (newlines included)
    file_bytes: int = 0  # bytes on disk (set by generate; the gzip size when compressed)
    first_event_date: dt.date | None = None
    last_event_date: dt.date | None = None
    platform_jobs: int = 0
    platform_datasets: int = 0


def _check(events: int, days: int, jobs: int | None) -> None:
    if not isinstance(events, int) or events < 2:
        raise ValueError(f"events must be an integer >= 2 (one START + COMPLETE run), got {events!r}")
    if not isinstance(days, int) or days < 1:
        raise ValueError(f"days must be an integer >= 1, got {days!r}")
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a positive integer or None, got {jobs!r}")


def iter_lines(events: int, days: int = 1, start: dt.date = dt.date(2025, 1, 1), seed: int = 1,
               jobs: int | None = None, stats: PlatformStats | None = None) -> Iterator[str]:
    """The stream's compact JSON lines (no newline), in eventTime order.

    Arguments are checked (ValueError) when called, not when iterated. `stats`, if given, is
    filled in as the lines are produced.
    """
    _check(events, days, jobs)
    rng = random.Random(seed)
    n_jobs = jobs if jobs is not None else default_jobs(events, days)
    platform = _Platform(rng, n_jobs)
    plan = _day_plan(events, days, rng)
    stats = stats if stats is not None else PlatformStats()
    stats.platform_jobs = n_jobs
    stats.platform_datasets = len(platform.ds_name)
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"lineage_assets/demo/platform/{seed}/{start.isoformat()}/{events}/{days}/{n_jobs}")
    return _stream(platform, plan, start, seed, rng, namespace, stats)


def iter_events(events: int, days: int = 1, start: dt.date = dt.date(2025, 1, 1), seed: int = 1,
                jobs: int | None = None, stats: PlatformStats | None = None) -> Iterator[dict]:
    """The stream's events as fresh dicts (json.loads of iter_lines)."""
    lines = iter_lines(events, days, start, seed, jobs, stats)
    return map(json.loads, lines)


def _profile_time(u: float) -> int:
    """u in [0, 1) -> microseconds into the day, following the hourly profile."""
    x = u * _PROFILE_TOTAL
    h = bisect.bisect_right(_PROFILE_CUM, x)
    h = min(h, 23)
    before = _PROFILE_CUM[h - 1] if h else 0.0
    frac = (x - before) / _HOURLY_PROFILE[h]
    return int((h + min(frac, 1.0)) / 24.0 * _LAST_START_US)


_PROFILE_CUM = list(_accumulate([float(w) for w in _HOURLY_PROFILE]))
_PROFILE_TOTAL = _PROFILE_CUM[-1]


def _stream(pf: _Platform, plan, start: dt.date, seed: int, rng: random.Random, namespace: uuid.UUID,
            stats: PlatformStats) -> Iterator[str]:
    texts = _Texts(pf, seed)
    n_jobs = len(pf.job_name)
    runs_of = array("I", bytes(4 * n_jobs))
    version_of = array("I", bytes(4 * n_jobs))
    job_seen = bytearray(n_jobs)
    ds_seen = bytearray(len(pf.ds_name))
    versions_seen: set[tuple[int, int]] = set()
    cum, total_weight = pf.cum_weights, pf.cum_weights[-1]
    random_ = rng.random
    uuid5 = uuid.uuid5
    heap: list = []
    seq = 0
    dates: dict[int, str] = {}
    producer_json = [_J(u) for u in PRODUCER_URL]
    tail = [',"producer":' + producer_json[p] + ',"schemaURL":' + _J(SCHEMA_URL) + "}" for p in range(4)]
    version_head = [',"version":' + _facet_head("version", p) + ',"datasetVersion":"' for p in range(4)]
    created = [',"lifecycleStateChange":' + _facet_head("lifecycleStateChange", p) + ',"lifecycleStateChange":"CREATE"}' for p in range(4)]
    stats_head = ['},"outputFacets":{"outputStatistics":' + _facet_head("outputStatistics", p) + ',"rowCount":' for p in range(4)]
    parent_head = ['"parent":' + _facet_head("parent", p) + ',"run":{"runId":"' for p in range(4)]
    nominal_head = ['"nominalTime":' + _facet_head("nominalTime", p) + ',"nominalStartTime":"' for p in range(4)]
    dbt_run_head = '"dbt_run":' + _facet_head("custom", DBT) + ',"invocation_id":"'
    error_text = [
        ['"errorMessage":' + _facet_head("errorMessage", p) + ',"message":' + _J(_ERRORS[i][0]) + ',"programmingLanguage":"'
         + _ERRORS[i][1] + '","stackTrace":' + _J(_ERRORS[i][2]) + "}" for i in _ERRORS_OF[p]]
        for p in range(4)
    ]
    slot_ids: dict[tuple, str] = {}
    first_day = last_day = -1

    def when(t: int, ms: bool) -> str:
        day, rest = divmod(t, DAY_US)
        date = dates.get(day)
        if date is None:
            date = dates[day] = (start + dt.timedelta(days=day)).isoformat()
        h, rest = divmod(rest, 3_600_000_000)
        m, rest = divmod(rest, 60_000_000)
        s, us = divmod(rest, 1_000_000)
        if ms:
            return f"{date}T{h:02d}:{m:02d}:{s:02d}.{us // 1000:03d}Z"
        return f"{date}T{h:02d}:{m:02d}:{s:02d}.{us:06d}Z"

    def render(kind: str, t: int, run: tuple) -> str:
        nonlocal first_day, last_day
        entry, run_id, facets, p, run_no, fail_facets = run[0], run[1], run[2], run[3], run[4], run[5]
        day = t // DAY_US
        if first_day < 0:
            first_day = day
        last_day = day
        if kind == "START":
            outputs = "[]"
        elif kind == "COMPLETE":
            parts = []
            for text, flags, o, lake, width in entry.outputs:
                if flags & 4 and run_no == 1:
                    text += created[p]
                if flags & 1:
                    text += version_head[p] + str(run_no + 20 + o % 400) + '"}'
                rows = int((1000 + (o * 7919) % 2_000_000) * (0.7 + 0.6 * random_()))
                text += stats_head[p] + str(rows) + ',"size":' + str(rows * (24 + 9 * width))
                text += (',"fileCount":' + str(1 + rows // 250_000) + "}}}") if lake else "}}}"
                parts.append(text)
            outputs = "[" + ",".join(parts) + "]"
            stats.column_edges += entry.edges
        else:  # RUNNING, FAIL
            outputs = "[" + ",".join([o[0] + "}}" for o in entry.outputs]) + "]"
            stats.column_edges += entry.edges
            if kind == "FAIL":
                facets = fail_facets
        line = (
            '{"eventType":"' + kind + '","eventTime":"' + when(t, _MS_PRECISION[p]) + '","run":{"runId":"' + run_id
            + '","facets":' + facets + '},"job":' + entry.job + ',"inputs":' + entry.inputs + ',"outputs":' + outputs
            + tail[p]
        )
        stats.events += 1
        stats.bytes += len(line) + 1
        return line

    def slot_id(kind: str, pipeline: int, t: int) -> str:
        key = (kind, pipeline, t // 3_600_000_000)
        value = slot_ids.get(key)
        if value is None:
            value = slot_ids[key] = str(uuid5(namespace, f"{kind}/{pipeline}/{key[2]}"))
        return value

    for d, (k, spill) in enumerate(plan):
        base = d * DAY_US
        slot_ids.clear()
        total = k + (1 if spill else 0)
        if total:
            m3 = int(total * 0.005 + random_())
            if (total - 3 * m3) % 2:
                m3 = m3 + 1 if 3 * (m3 + 1) <= total else m3 - 1
            n_runs = m3 + (total - 3 * m3) // 2
            previous = 0
            for i in range(n_runs):
                j = bisect.bisect_right(cum, random_() * total_weight)
                j = min(j, n_jobs - 1)
                p = pf.job_producer[j]
                ms = _MS_PRECISION[p]
                crosses = spill and i == n_runs - 1
                t = _profile_time((i + random_()) / n_runs)
                if crosses:
                    t = max(t, DAY_US - rng.randint(60, 1800) * 1_000_000)
                t = max(t, previous)
                if ms and t % 1000:
                    t += 1000 - t % 1000
                previous = t
                running = random_() * (n_runs - i) < m3
                if running:
                    m3 -= 1
                failed = random_() < 0.02
                if random_() < 0.02:
                    version_of[j] += 1
                runs_of[j] += 1
                run_no = runs_of[j]
                version = version_of[j]
                seconds = pf.job_seconds[j] * (0.6 + 0.9 * random_())
                if failed:
                    seconds *= 0.05 + 0.6 * random_()
                duration = max(1_000_000, int(seconds * 1_000_000))
                if crosses:
                    end = DAY_US + rng.randint(30, 2400) * 1_000_000
                else:
                    end = t + duration
                    if end > DAY_US - 1000:
                        end = t + int((DAY_US - 1000 - t) * (0.5 + 0.5 * random_()))
                if ms:
                    end -= end % 1000
                entry = texts.entry(j, version)
                run_id = str(uuid5(namespace, f"{j}/{run_no}"))
                facet_parts = list(entry.run_static)
                pipeline = pf.job_pipeline[j]
                absolute = base + t
                if pf.job_flags[j] & 4:
                    parent = slot_id("dag", pipeline, absolute)
                    dag = _J(pf.pipeline_name[pipeline])
                    facet_parts.append(
                        parent_head[p] + parent + '"},"job":{"namespace":"airflow-prod","name":' + dag + '},"root":{"run":{"runId":"'
                        + parent + '"},"job":{"namespace":"airflow-prod","name":' + dag + "}}}"
                    )
                if p == AIRFLOW or p == PYTHON:
                    hour = absolute - absolute % 3_600_000_000
                    facet_parts.append(nominal_head[p] + when(hour, False) + '"}')
                elif p == DBT:
                    facet_parts.append(dbt_run_head + slot_id("dbt", pipeline, absolute) + '"}')
                facets = "{" + ",".join(facet_parts) + "}"
                fail_facets = None
                if failed:
                    fail_facets = "{" + ",".join(facet_parts + [rng.choice(error_text[p])]) + "}"
                run = (entry, run_id, facets, p, run_no, fail_facets)
                # bookkeeping
                stats.runs += 1
                if failed:
                    stats.failed_runs += 1
                if not job_seen[j]:
                    job_seen[j] = 1
                    stats.jobs += 1
                    for ds in pf.job_inputs[j] + pf.job_outputs[j]:
                        if not ds_seen[ds]:
                            ds_seen[ds] = 1
                            stats.datasets += 1
                if (j, version) not in versions_seen:
                    versions_seen.add((j, version))
                    stats.code_versions += 1
                while heap and heap[0][0] <= absolute:
                    t_, _, kind_, run_ = heapq.heappop(heap)
                    yield render(kind_, t_, run_)
                yield render("START", absolute, run)
                if running:
                    stats.running_events += 1
                    stop = min(end, DAY_US - 1000)
                    r = t + max(1000, int((stop - t) * random_()))
                    if ms:
                        r -= r % 1000
                    r = max(r, t + (1000 if ms else 1))
                    seq += 1
                    heapq.heappush(heap, (base + r, seq, "RUNNING", run))
                seq += 1
                heapq.heappush(heap, (base + end, seq, "FAIL" if failed else "COMPLETE", run))
        limit = base + DAY_US
        while heap and heap[0][0] < limit:
            t_, _, kind_, run_ = heapq.heappop(heap)
            yield render(kind_, t_, run_)
    while heap:
        t_, _, kind_, run_ = heapq.heappop(heap)
        yield render(kind_, t_, run_)
    if first_day >= 0:
        stats.first_event_date = start + dt.timedelta(days=first_day)
        stats.last_event_date = start + dt.timedelta(days=last_day)


# ---------------------------------------------------------------- the file


def generate(path: str | os.PathLike, events: int, days: int = 1, start: dt.date = dt.date(2025, 1, 1), seed: int = 1,
             jobs: int | None = None, compress: bool = False) -> PlatformStats:
    """Write the stream to `path` as NDJSON (gzip when `compress`), atomically (path.tmp, then rename)."""
    stats = PlatformStats()
    lines = iter_lines(events, days, start, seed, jobs, stats)  # checks the arguments before any file is touched
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    try:
        with open(tmp, "wb", buffering=1 << 20) as raw:
            out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=1) if compress else raw
            batch: list[str] = []
            for line in lines:
                batch.append(line)
                if len(batch) == 64:
                    batch.append("")
                    out.write("\n".join(batch).encode("ascii"))
                    batch.clear()
            if batch:
                batch.append("")
                out.write("\n".join(batch).encode("ascii"))
            if compress:
                out.close()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    stats.file_bytes = target.stat().st_size
    return stats
