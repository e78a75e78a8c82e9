"""The one registry of warehouse tables: name, folder, partition columns, keys and Spark schema.

Everything else derives from here: the Spark schemas the pipeline reads and writes with, the
DuckDB column types of the query helper and of `duckdb_views.sql`, the asset keys and the
`dagster/column_schema` metadata, the `summary` command's list, and the fold's state parts.

Kinds:
- `intake`: staged per landing batch (landed_events, rejected_events, drop_files) and the daily `events`;
- `ledger`: the drop ledger, one unpartitioned set of files replaced by each landing batch;
- `history`: the fold's tables, partitioned by the day a row came to be (DESIGN.md section 3);
- `state`: the fold's carried state as validity intervals `[valid_from, valid_to)` of days,
  partitioned by `valid_to` (9999-12-31 while still valid): the state as of day X is the rows
  with `valid_from <= X < valid_to`, found in the partitions `valid_to > X` only;
- `snapshot`: the current graph, one unpartitioned set of files per commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import types as T

from lineage_assets.warehouse.schemas import EVENT_FIELDS, NAME_PAIR, REJECTED_FIELDS, RUN_DATASET, schema

OPEN = "9999-12-31"  # valid_to of a state row that is still valid

VERSIONED = schema("namespace string, name string, version_id string")


@dataclass(frozen=True)
class Table:
    name: str
    kind: str  # intake | history | state | snapshot
    columns: T.StructType  # data columns (without the partition columns)
    partition_by: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    description: str = ""
    folder: str = ""
    partition_types: tuple[T.DataType, ...] = field(default=())

    @property
    def path(self) -> str:
        return self.folder or self.name

    @property
    def schema(self) -> T.StructType:
        """Data columns followed by the partition columns (as Spark reads the table back)."""
        return T.StructType([*self.columns.fields, *[T.StructField(c, t) for c, t in zip(self.partition_by, self.partition_types)]])

    @property
    def column_names(self) -> list[str]:
        return self.schema.fieldNames()

    @property
    def day_column(self) -> str | None:
        """The (first) partition column: the day a row belongs to; None for snapshots."""
        return self.partition_by[0] if self.partition_by else None


def _table(name, kind, spec, partition_by=(), keys=(), description="", folder="", partition_types=None, **named) -> Table:
    columns = spec if isinstance(spec, T.StructType) else schema(spec, **named)
    types = partition_types or tuple(T.DateType() for _ in partition_by)
    return Table(name, kind, columns, tuple(partition_by), tuple(keys), description, folder, tuple(types))


# ---------------------------------------------------------------------------------- intake

EVENT_COLUMNS = T.StructType(EVENT_FIELDS)
LANDED_EVENTS = _table(
    "landed_events", "intake", T.StructType([*EVENT_FIELDS, T.StructField("file_id", T.StringType())]),
    ("event_date", "batch_id"), ("event_id",), "Accepted events of each landing batch, staged per (event_date, batch).",
    partition_types=(T.DateType(), T.StringType()),
)
REJECTED_EVENTS = _table(
    "rejected_events", "intake", T.StructType(REJECTED_FIELDS), ("read_date", "batch_id"), ("source_file", "source_line"),
    "Every record that is not an acceptable event, with its whole text and a reason code.",
    partition_types=(T.DateType(), T.StringType()),
)
DROP_FILES = _table(
    "drop_files", "intake",
    "path string, file_id string, kind string, form string, bytes_from long, bytes_to long, "
    "first_line long, range_sha256 string, pending_bytes long, read long, accepted long, rejected long, duplicates long, "
    "rejected_by_reason string",
    ("read_date", "batch_id"), ("batch_id", "path"),
    "One row per file and landing batch: the bytes it consumed, their hash, and read = accepted + rejected + duplicates.",
    partition_types=(T.DateType(), T.StringType()),
)
DROP_LEDGER = _table(
    "drop_ledger", "ledger",
    "path string, file_id string, device long, inode long, size long, mtime_ns long, offset long, lines long, "
    "head_sha string, tail_sha string, form string, batch_id string",
    keys=("path",), folder="_ledger/files",
    description="What the intake has consumed of each file of the drop folder (intake.ledger), committed with the events.",
)
EVENTS = _table(
    "events", "intake", EVENT_COLUMNS, ("event_date",), ("event_id",),
    "Every accepted event once, partitioned by the UTC date of eventTime.",
)

# ---------------------------------------------------------------------------------- history

RUNS = _table(
    "runs", "history",
    "run_id string, job_namespace string, job_name string, state string, started_at timestamp, ended_at timestamp, "
    "inputs array<RUN_DATASET>, outputs array<RUN_DATASET>, run_facets string, job_facets string, code_version string, "
    "parent_run_id string, root_run_id string, event_count int",
    ("end_date",), ("run_id",),
    "Terminal runs, all events of a runId coalesced (DESIGN.md section 4); inputs and outputs as canonical datasets "
    "with the partitions named and the names reported (section 10).",
    RUN_DATASET=RUN_DATASET,
)
JOB_VERSIONS = _table(
    "job_versions", "history",
    "job_namespace string, job_name string, version_id string, inputs array<NAME_PAIR>, outputs array<NAME_PAIR>, "
    "code_version string, lineage_unknown boolean, created_by_run_id string, created_at timestamp",
    ("created_date",), ("version_id",), "Distinct versions of each job (DESIGN.md section 4).", NAME_PAIR=NAME_PAIR,
)
DATASET_VERSIONS = _table(
    "dataset_versions", "history",
    "version_id string, namespace string, name string, run_id string, run_state string, job_namespace string, "
    "job_name string, job_version_id string, created_at timestamp, storage_version string, fields string, "
    "lifecycle_state string, row_count long, partitions array<string>",
    ("created_date",), ("version_id",),
    "One version per output of each terminal run, and per DatasetEvent; partitions: those the write named.",
)
RUN_LINEAGE = _table(
    "run_lineage", "history",
    "run_id string, job_namespace string, job_name string, job_version_id string, state string, started_at timestamp, "
    "ended_at timestamp, input_versions array<VERSIONED>, output_versions array<VERSIONED>",
    ("end_date",), ("run_id",),
    "Each terminal run with its job version and the dataset versions it read and wrote.", VERSIONED=VERSIONED,
)
COLUMN_EDGE_SPEC = (
    "output_version_id string, output_namespace string, output_name string, output_field string, "
    "input_namespace string, input_name string, input_field string, input_version_id string, "
    "transformation_type string, transformation_subtype string, transformation_description string, masking boolean, "
    "legacy_transformation_type string, legacy_transformation_description string, run_id string, created_at timestamp, "
    "input_declared boolean, output_field_known boolean, input_field_known boolean, output_field_type string, "
    "input_field_type string"
)
COLUMN_LINEAGE = _table(
    "column_lineage", "history", COLUMN_EDGE_SPEC, ("created_date",), (),
    "One row per (output version, output field, input field, transformation) of the columnLineage facet; "
    "dataset-wide dependencies have output_field null. No row is stored twice.",
)
FIELD_SPEC = "version_id string, namespace string, name string, field_path string, type string, description string, ordinal int"
DATASET_FIELDS = _table(
    "dataset_fields", "history", FIELD_SPEC, ("created_date",), ("version_id", "field_path"),
    "The fields of each dataset version (schema facet), nested fields as dotted paths.",
)
FIELD_OPERATIONS = _table(
    "field_operations", "history",
    "run_id string, job_namespace string, job_name string, output_version_id string, output_namespace string, "
    "output_name string, step int, line int, directive string, directive_name string, field string, label string, "
    "reads array<string>, new_name string, all_columns boolean, note string, created_at timestamp",
    ("created_date",), (),
    "One row per run with a Wrangler recipe, output dataset, recipe step and column: the directive, its label "
    "(Read/Drop/Add/Rename/Modify), the columns it read; all_columns: a Read or Add of an 'all columns ...' form "
    "only the data binds (never a Rename or Drop); label null: a reference only the data could settle, with the "
    "reason in note (and new_name for a rename whose old name only the data knows) (DESIGN.md section 9).",
)
FIELD_TAGS = _table(
    "field_tags", "history",
    "version_id string, namespace string, name string, field string, tag_key string, tag_value string, source string, "
    "run_id string, created_at timestamp",
    ("created_date",), (),
    "The tags facet of each dataset version that carries one: one row per field (null: the whole dataset) and tag; "
    "a version whose facet lists no tag has one row with tag_key null. A dataset's tags are those of its newest "
    "version with the facet (DESIGN.md section 9).",
)
ALIAS_SPEC = (
    "alias_namespace string, alias_name string, namespace string, name string, identifier_type string, "
    "learnt_at timestamp, event_id string"
)
DATASET_ALIASES = _table(
    "dataset_aliases", "history", ALIAS_SPEC, ("created_date",), ("alias_namespace", "alias_name", "learnt_at", "event_id", "namespace", "name"),
    "Each change of what an identifier stands for (symlinks facet): alias -> canonical as stated, from when, by which event "
    "(DESIGN.md section 10).",
)

# ---------------------------------------------------------------------------------- state

_VALID = "valid_from date"
JOB_STATE_SPEC = (
    "job_namespace string, job_name string, version_id string, inputs array<NAME_PAIR>, outputs array<NAME_PAIR>, "
    "code_version string, lineage_unknown boolean, known_versions array<string>, latest_run_id string, latest_state string, "
    "latest_ended_at timestamp, latest_parent_run_id string"
)
DATASET_STATE_SPEC = "namespace string, name string, version_id string, created_at timestamp, storage_version string, writer_run_id string"
STATE_OPEN_EVENTS = _table(
    "state_open_events", "state",
    T.StructType([*EVENT_FIELDS, T.StructField("event_date", T.DateType()), T.StructField("valid_from", T.DateType()),
                  T.StructField("kept_events", T.IntegerType())]),
    ("valid_to",), ("event_id",),
    "Events of each run, from their day until the day of its last event once it has ended (still valid while it has not); "
    "kept_events: how many events its run kept when its row was written.", folder="_state/open_events",
)
STATE_JOBS = _table(
    "state_jobs", "state", f"{JOB_STATE_SPEC}, {_VALID}", ("valid_to",), ("job_namespace", "job_name"),
    "Each job's current version, every version id it ever had and its latest run.", folder="_state/jobs", NAME_PAIR=NAME_PAIR,
)
STATE_DATASETS = _table(
    "state_datasets", "state", f"{DATASET_STATE_SPEC}, {_VALID}", ("valid_to",), ("namespace", "name"),
    "Every COMPLETE dataset version, valid until the next one (empty intervals kept: readers that span days "
    "resolve against them).", folder="_state/datasets",
)
STATE_STORAGE_VERSIONS = _table(
    "state_storage_versions", "state", f"{DATASET_STATE_SPEC}, {_VALID}", ("valid_to",), ("namespace", "name", "storage_version"),
    "The latest version per (dataset, DatasetVersion facet value).", folder="_state/storage_versions",
)
STATE_COLUMNS = _table(
    "state_columns", "state", f"job_namespace string, job_name string, {COLUMN_EDGE_SPEC}, {_VALID}", ("valid_to",),
    ("job_namespace", "job_name", "output_namespace", "output_name"),
    "Column edges of each (job, output dataset)'s latest terminal run that wrote it.", folder="_state/columns",
)
STATE_ALIASES = _table(
    "state_aliases", "state", f"{ALIAS_SPEC}, {_VALID}", ("valid_to",), ("alias_namespace", "alias_name"),
    "Each identifier's latest alias statement.", folder="_state/aliases",
)
STATE_FIELDS = _table(
    "state_fields", "state", f"{FIELD_SPEC}, created_at timestamp, rank int, {_VALID}", ("valid_to",), ("namespace", "name"),
    "Each dataset's current fields (newest version with a schema; FAIL/ABORT writes only as a fallback).",
    folder="_state/fields",
)

# ---------------------------------------------------------------------------------- snapshots

CURRENT_JOBS = _table(
    "current_jobs", "snapshot",
    "job_namespace string, job_name string, version_id string, latest_run_id string, latest_state string, "
    "latest_ended_at timestamp, lineage_unknown boolean, code_version string, component_id string, latest_parent_run_id string, "
    "temporary_datasets array<NAME_PAIR>",
    keys=("job_namespace", "job_name"),
    description="Each job's current version (that of its latest terminal run), its component, its latest run's parent run, "
    "and the temporary datasets its current version writes or reads (DESIGN.md section 10).",
    NAME_PAIR=NAME_PAIR,
)
CURRENT_LINEAGE = _table(
    "current_lineage", "snapshot",
    "job_namespace string, job_name string, version_id string, dataset_namespace string, dataset_name string, "
    "direction string, component_id string, temporary boolean",
    keys=("job_namespace", "job_name", "dataset_namespace", "dataset_name", "direction"),
    description="The edges of each job's current version: the current lineage graph; temporary: the dataset is written and "
    "read only by one job, or only by the children of one parent run (DESIGN.md section 10).",
)
CURRENT_COLUMN_LINEAGE = _table(
    "current_column_lineage", "snapshot", f"job_namespace string, job_name string, {COLUMN_EDGE_SPEC}",
    description="Column edges of each dataset's current writers (latest run of each job whose current version outputs it).",
)
CURRENT_DATASET_FIELDS = _table(
    "current_dataset_fields", "snapshot",
    "namespace string, name string, version_id string, field_path string, type string, description string, ordinal int",
    keys=("namespace", "name", "field_path"),
    description="Each dataset's current fields (its newest version with a schema; FAIL/ABORT writes only as a fallback).",
)

CURRENT_ALIASES = _table(
    "current_aliases", "snapshot", "alias_namespace string, alias_name string, namespace string, name string",
    keys=("alias_namespace", "alias_name"),
    description="Every identifier that stands for another dataset now, with the canonical dataset it resolves to (chains followed).",
)

ALL: tuple[Table, ...] = (
    LANDED_EVENTS, REJECTED_EVENTS, DROP_FILES, EVENTS, DROP_LEDGER,
    RUNS, JOB_VERSIONS, DATASET_VERSIONS, RUN_LINEAGE, COLUMN_LINEAGE, DATASET_FIELDS, DATASET_ALIASES, FIELD_OPERATIONS, FIELD_TAGS,
    STATE_OPEN_EVENTS, STATE_JOBS, STATE_DATASETS, STATE_STORAGE_VERSIONS, STATE_COLUMNS, STATE_FIELDS, STATE_ALIASES,
    CURRENT_JOBS, CURRENT_LINEAGE, CURRENT_COLUMN_LINEAGE, CURRENT_DATASET_FIELDS, CURRENT_ALIASES,
)
BY_NAME = {t.name: t for t in ALL}
HISTORY = tuple(t for t in ALL if t.kind == "history")
STATE = tuple(t for t in ALL if t.kind == "state")
SNAPSHOTS = tuple(t for t in ALL if t.kind == "snapshot")
FOLD_OUTPUTS = tuple(t.name for t in (*HISTORY, *STATE))  # what a fold of a range writes (and its checks hash)
USER_TABLES = tuple(t for t in ALL if t.kind not in ("state", "ledger"))


def get(name: str) -> Table:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown table {name!r}; tables: {', '.join(BY_NAME)}") from None


# ---------------------------------------------------------------------------------- derived forms

_DUCKDB = {
    # Spark writes timestamps as UTC instants (isAdjustedToUTC), which DuckDB reads as TIMESTAMPTZ
    T.StringType: "VARCHAR", T.TimestampType: "TIMESTAMP WITH TIME ZONE", T.DateType: "DATE", T.IntegerType: "INTEGER",
    T.LongType: "BIGINT", T.BooleanType: "BOOLEAN",
}


def duckdb_type(data_type: T.DataType) -> str:
    if isinstance(data_type, T.ArrayType):
        return f"{duckdb_type(data_type.elementType)}[]"
    if isinstance(data_type, T.StructType):
        return "STRUCT(" + ", ".join(f'"{f.name}" {duckdb_type(f.dataType)}' for f in data_type.fields) + ")"
    return _DUCKDB[type(data_type)]


def duckdb_columns(table: Table) -> list[tuple[str, str]]:
    return [(f.name, duckdb_type(f.dataType)) for f in table.schema.fields]


def type_text(data_type: T.DataType) -> str:
    """A short readable type (for the Dagster column schema)."""
    return data_type.simpleString()
