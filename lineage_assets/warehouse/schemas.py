"""Schema building blocks (no JVM needed) and the intake parser's row; tables live in `tables.py`."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

_SIMPLE = {
    "string": T.StringType(),
    "timestamp": T.TimestampType(),
    "date": T.DateType(),
    "int": T.IntegerType(),
    "long": T.LongType(),
    "boolean": T.BooleanType(),
}


def _type(name: str, named: dict[str, T.DataType]) -> T.DataType:
    if name.startswith("array<") and name.endswith(">"):
        return T.ArrayType(_type(name[len("array<") : -1], named))
    if name in _SIMPLE:
        return _SIMPLE[name]
    return named[name]


def schema(spec: str, **named: T.DataType) -> T.StructType:
    """A StructType from 'name type, name type, ...' without a JVM (usable at import time).

    Types: string, timestamp, date, int, long, boolean, array<...>, or a keyword argument's name.
    """
    fields = []
    for item in spec.split(","):
        name, type_name = item.split()
        fields.append(T.StructField(name, _type(type_name, named)))
    return T.StructType(fields)


IO_DATASET = T.StructType(
    [
        T.StructField("namespace", T.StringType()),
        T.StructField("name", T.StringType()),
        T.StructField("facets", T.StringType()),
        T.StructField("io_facets", T.StringType()),
    ]
)

NAME_PAIR = T.StructType([T.StructField("namespace", T.StringType()), T.StructField("name", T.StringType())])

# A run's input or output as the fold keeps it (`runs`): the canonical dataset (DESIGN.md section
# 10), its merged facets, the partitions the run named and the names it reported it by (when
# they differ from the canonical one).
RUN_DATASET = T.StructType(
    [
        *IO_DATASET.fields,
        T.StructField("partitions", T.ArrayType(T.StringType())),
        T.StructField("reported", T.ArrayType(NAME_PAIR)),
    ]
)

# Columns shared by `events` and the per-drop staging of accepted events.
EVENT_FIELDS = [
    T.StructField("event_id", T.StringType()),
    T.StructField("event_time", T.TimestampType()),
    T.StructField("event_time_raw", T.StringType()),
    T.StructField("event_kind", T.StringType()),
    T.StructField("event_type", T.StringType()),
    T.StructField("run_id", T.StringType()),
    T.StructField("job_namespace", T.StringType()),
    T.StructField("job_name", T.StringType()),
    T.StructField("dataset_namespace", T.StringType()),
    T.StructField("dataset_name", T.StringType()),
    T.StructField("producer", T.StringType()),
    T.StructField("schema_url", T.StringType()),
    T.StructField("inputs", T.ArrayType(IO_DATASET)),
    T.StructField("outputs", T.ArrayType(IO_DATASET)),
    T.StructField("run_facets", T.StringType()),
    T.StructField("job_facets", T.StringType()),
    T.StructField("dataset_facets", T.StringType()),
    T.StructField("event_json", T.StringType()),
    T.StructField("source_file", T.StringType()),
    T.StructField("source_line", T.IntegerType()),
]

REJECTED_FIELDS = [
    T.StructField("source_file", T.StringType()),
    T.StructField("source_line", T.IntegerType()),
    T.StructField("raw", T.StringType()),
    T.StructField("raw_encoding", T.StringType()),
    T.StructField("reason_code", T.StringType()),
    T.StructField("reason", T.StringType()),
    T.StructField("event_time", T.TimestampType()),
    T.StructField("file_id", T.StringType()),
]
# What the Python parser emits for every record of a drop: one row, accepted or rejected.
PARSED = T.StructType(
    [
        T.StructField("accepted", T.BooleanType()),
        *EVENT_FIELDS,
        T.StructField("event_date", T.StringType()),
        *[f for f in REJECTED_FIELDS if f.name not in {"source_file", "source_line", "event_time", "file_id"}],
    ]
)


def arrow_schema(spark_schema: T.StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC")
