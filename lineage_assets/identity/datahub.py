"""DataHub identity of datasets and fields (DESIGN.md section 8, "Field URNs").

A dataset is `urn:li:dataset:(urn:li:dataPlatform:<platform>,<name>,<ENV>)` and a field
`urn:li:schemaField:(<dataset urn>,<field path>)`. The platform and name are derived from the
OpenLineage namespace and name as DataHub's OpenLineage converter derives them; the field path is
DataHub's v1 (dotted) or v2 (`[version=2.0].[type=...]...`) form, both made from the schema
facet by one normaliser and both resolving to the same field.

Where we differ from DataHub on purpose: the converter concatenates field URNs without escaping
(a field `a,b` makes an unparseable URN) and drops a dataset whose name is not a valid
`java.net.URI`; here every name and path is percent-encoded by one function, `%` included, so a
URN always parses and decodes back to the exact name.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Name = tuple[str, str]  # (namespace, name)

ENV_VAR = "LINEAGE_DATAHUB_ENV"
PLATFORMS_VAR = "LINEAGE_DATAHUB_PLATFORMS"

# datahub-project/datahub li-utils/src/main/pegasus/com/linkedin/common/FabricType.pdl: the values a
# dataset URN's ENV may take.
FABRIC_TYPES = frozenset(
    {"DEV", "TEST", "QA", "UAT", "EI", "PRE", "STG", "NON_PROD", "PROD", "CORP", "RVW", "PRD", "TST", "SIT", "SBX", "SANDBOX"}
)


@dataclass(frozen=True)
class DataHubConfig:
    """The ENV of every URN (a FabricType, default PROD) and platform overrides: namespace or URI
    scheme -> platform, the namespace's entry winning over its scheme's."""

    env: str = "PROD"
    platforms: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.env not in FABRIC_TYPES:
            raise ValueError(f"DataHub ENV {self.env!r} is not one of {', '.join(sorted(FABRIC_TYPES))}")
        for key, platform in self.platforms.items():
            if not isinstance(key, str) or not key or not isinstance(platform, str) or not platform:
                raise ValueError(f"platform override {key!r} -> {platform!r}: both must be non-empty strings")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DataHubConfig:
        """`LINEAGE_DATAHUB_ENV` (any case, default PROD) and `LINEAGE_DATAHUB_PLATFORMS` (a JSON
        object namespace-or-scheme -> platform)."""
        environ = os.environ if environ is None else environ
        env = environ.get(ENV_VAR, "").strip().upper() or "PROD"
        if env not in FABRIC_TYPES:
            raise ValueError(f"{ENV_VAR}={environ[ENV_VAR]!r} is not one of {', '.join(sorted(FABRIC_TYPES))}")
        text = environ.get(PLATFORMS_VAR, "").strip()
        try:
            platforms = json.loads(text) if text else {}
        except ValueError as exc:
            raise ValueError(f"{PLATFORMS_VAR} is not JSON: {exc}") from None
        if not isinstance(platforms, dict):
            raise ValueError(f"{PLATFORMS_VAR} must be a JSON object of namespace-or-scheme -> platform")
        try:
            return cls(env, platforms)
        except ValueError as exc:
            raise ValueError(f"{PLATFORMS_VAR}: {exc}") from None


DEFAULT_CONFIG = DataHubConfig()

# ---------------------------------------------------------------------------------------------
# Namespace -> platform and DataHub name.
#
# datahub-project/datahub metadata-integration/java/openlineage-converter/src/main/java/io/
# datahubproject/openlineage/converter/OpenLineagePlatformResolver.java (getDatasetUrnFromOlDataset;
# OpenLineageToDataHub.java holds the same method, in older versions without the name-only URI):
# - a namespace holding "://" is joined to the name ("/" between them unless one side has it) and
#   read as a URI; a namespace without it but a name with it (old Marquez payloads such as
#   namespace "file.localhost", name "file://localhost/x") is the URI alone;
# - the platform is the URI scheme through PLATFORM_MAP (awsathena -> athena, sqlserver -> mssql),
#   any other scheme is the platform itself; host and port are dropped, the name is kept as is;
# - a file-system scheme (HdfsPlatform.isFsPlatformPrefix) goes to HdfsPathDataset.create instead;
# - a namespace without "://" (`bigquery`, `file`, also `file:/tmp/x`) is the platform itself and
#   the name is kept as is.
# The converter gives up (no URN) when the URI does not parse; we do not, and a scheme that is not
# a valid URI scheme makes the namespace bare.
SCHEME_PLATFORMS = {"awsathena": "athena", "sqlserver": "mssql"}

# .../openlineage/dataset/HdfsPlatform.java: file-system URI prefixes and their platforms. `hdfs` is
# HdfsPlatform's default with no prefixes, so `hdfs://namenode:8020` is not a file-system namespace
# to the converter: its platform is the scheme `hdfs` and the name is kept (leading "/" included).
FS_PLATFORMS = {
    "s3": "s3", "s3a": "s3", "s3n": "s3",
    "gs": "gcs", "gcs": "gcs",
    "abfs": "abs", "abfss": "abs", "wasb": "abs", "wasbs": "abs",
    "dbfs": "dbfs",
    "file": "file",
}

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")  # RFC 3986 scheme


def _uri(namespace: str, name: str) -> str | None:
    """The URI the converter reads a dataset's platform from; None for a bare namespace."""
    if "://" in namespace:
        joiner = "" if namespace.endswith("/") or name.startswith("/") else "/"
        return namespace + joiner + name
    if "://" in name:
        return name
    return None


def _path_dataset(uri: str) -> tuple[str, str]:
    """(platform, name) of a file-system URI as HdfsPathDataset.create makes them without path
    specs (datahub-project/datahub .../openlineage/dataset/HdfsPathDataset.java): trailing "/"
    stripped, the text after "://" is the name with one leading "/" dropped, so the bucket,
    container or host comes first (`s3a://b` + `/x` -> s3 `b/x`); the `file` platform keeps its
    leading "/" (`file:///tmp/x` -> `/tmp/x`). A URI that does not split into exactly two parts at
    "://" becomes platform `hdfs` named by the whole URI."""
    path = uri.rstrip("/")
    parts = path.split("://")
    while parts and not parts[-1]:  # Java's String.split drops trailing empty strings
        parts.pop()
    if len(parts) != 2:
        return "hdfs", path
    platform = FS_PLATFORMS.get(parts[0], "hdfs")
    return platform, parts[1] if platform == "file" else parts[1].removeprefix("/")


def _converter_identity(namespace: str, name: str) -> tuple[str, str, str | None]:
    """(platform, DataHub name, URI scheme or None) as DataHub's converter derives them."""
    uri = _uri(namespace, name)
    scheme = uri.split(":", 1)[0] if uri is not None else None
    if scheme is None or not _SCHEME.fullmatch(scheme):
        return namespace, name, None
    platform = SCHEME_PLATFORMS.get(scheme, scheme)
    if platform in FS_PLATFORMS:
        return (*_path_dataset(uri), scheme)
    return platform, name, scheme


def platform_of(namespace: str, overrides: Mapping[str, str] | None = None, *, name: str = "") -> str:
    """The DataHub platform of a namespace (the dataset name matters only when the namespace is
    bare and the name is a URI). An override keyed by the namespace wins over one keyed by its
    URI scheme."""
    platform, _, scheme = _converter_identity(namespace, name)
    overrides = overrides or {}
    if namespace in overrides:
        return overrides[namespace]
    if scheme is not None and scheme in overrides:
        return overrides[scheme]
    return platform


def datahub_name(namespace: str, name: str) -> str:
    """The dataset name DataHub uses: the OpenLineage name, except for file-system URIs where it is
    the bucket/container/host followed by the path (see `_path_dataset`)."""
    return _converter_identity(namespace, name)[1]


# ---------------------------------------------------------------------------------------------
# Encoding.
#
# datahub-project/datahub metadata-ingestion/src/datahub/utilities/urn_encoder.py: UrnEncoder
# percent-encodes RESERVED_CHARS = {",", "(", ")", "␟"} one character at a time with
# urllib.parse.quote (so "," -> %2C, "(" -> %28, ")" -> %29), and mce_builder.make_schema_field_urn
# (metadata-ingestion/src/datahub/emitter/mce_builder.py) applies it to field paths. DataHub leaves
# "%" alone, so its URNs cannot tell a name holding "%2C" from one holding ","; we encode "%" too,
# which makes `decode(encode(s)) == s` for every string.
RESERVED = frozenset(",()␟%")
_ESCAPE = re.compile(r"%(?:2[Cc]|2[89]|25|[Ee]2%90%9[Ff])")  # the encodings of RESERVED, any hex case


def encode(text: str) -> str:
    """`text` with the reserved characters percent-encoded (UTF-8), everything else kept."""
    return "".join(urllib.parse.quote(c, safe="") if c in RESERVED else c for c in text)


def decode(text: str) -> str:
    """The inverse of `encode`: only the escapes of reserved characters are decoded."""
    return _ESCAPE.sub(lambda m: urllib.parse.unquote(m.group(0)), text)


# ---------------------------------------------------------------------------------------------
# URNs.

DATASET_PREFIX = "urn:li:dataset:"
FIELD_PREFIX = "urn:li:schemaField:"
PLATFORM_PREFIX = "urn:li:dataPlatform:"


@dataclass(frozen=True)
class DatasetUrn:
    """A dataset URN's parts, decoded: platform, DataHub name and ENV."""

    platform: str
    name: str
    env: str

    def __post_init__(self) -> None:
        if not self.platform:
            raise ValueError("a dataset URN needs a platform")
        if not self.name:
            raise ValueError("a dataset URN needs a name")
        if self.env not in FABRIC_TYPES:
            raise ValueError(f"ENV {self.env!r} is not one of {', '.join(sorted(FABRIC_TYPES))}")

    @property
    def urn(self) -> str:
        return f"{DATASET_PREFIX}({PLATFORM_PREFIX}{encode(self.platform)},{encode(self.name)},{self.env})"


@dataclass(frozen=True)
class FieldUrn:
    """A schemaField URN's parts, decoded: its dataset and the field path (v1 or v2 as written)."""

    dataset: DatasetUrn
    path: str

    def __post_init__(self) -> None:
        if not self.path:
            raise ValueError("a field URN needs a field path")

    @property
    def urn(self) -> str:
        return f"{FIELD_PREFIX}({self.dataset.urn},{encode(self.path)})"


def dataset_urn(namespace: str, name: str, config: DataHubConfig = DEFAULT_CONFIG) -> str:
    """The DataHub URN of an OpenLineage dataset."""
    platform = platform_of(namespace, config.platforms, name=name)
    return DatasetUrn(platform, datahub_name(namespace, name), config.env).urn


def field_urn(namespace: str, name: str, field_path: str, config: DataHubConfig = DEFAULT_CONFIG) -> str:
    """The DataHub URN of a field (path in v1 or v2 form) of an OpenLineage dataset."""
    platform = platform_of(namespace, config.platforms, name=name)
    return FieldUrn(DatasetUrn(platform, datahub_name(namespace, name), config.env), field_path).urn


def _tuple_parts(urn: str, prefix: str) -> list[str]:
    """The top-level comma-separated parts of `<prefix>(...)`, found by walking the parentheses
    (reserved characters inside parts are percent-encoded, so every `,()` left is structure)."""
    body = urn[len(prefix):]
    if not body.startswith("("):
        raise ValueError(f"URN {urn!r} is malformed: expected '(' after {prefix!r}")
    parts: list[str] = []
    depth, start = 0, 1
    for i, c in enumerate(body):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and i != len(body) - 1:
                raise ValueError(f"URN {urn!r} is malformed: unbalanced parentheses (text after the closing ')')")
        elif c == "," and depth == 1:
            parts.append(body[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"URN {urn!r} is malformed: unbalanced parentheses (a '(' is never closed)")
    parts.append(body[start:-1])
    return parts


def _parse_dataset(urn: str) -> DatasetUrn:
    if not urn.startswith(DATASET_PREFIX):
        raise ValueError(f"URN {urn!r} is not a dataset URN (expected {DATASET_PREFIX!r})")
    parts = _tuple_parts(urn, DATASET_PREFIX)
    if len(parts) != 3:
        raise ValueError(f"dataset URN {urn!r} must have 3 parts (platform, name, ENV), found {len(parts)}")
    platform, name, env = parts
    if not platform.startswith(PLATFORM_PREFIX):
        raise ValueError(f"dataset URN {urn!r}: the platform must be a {PLATFORM_PREFIX!r} URN, found {platform!r}")
    try:
        return DatasetUrn(decode(platform[len(PLATFORM_PREFIX):]), decode(name), env)
    except ValueError as exc:
        raise ValueError(f"dataset URN {urn!r}: {exc}") from None


def parse_urn(urn: str) -> DatasetUrn | FieldUrn:
    """The parts of a dataset or schemaField URN; ValueError naming what is wrong otherwise."""
    if not isinstance(urn, str) or not urn:
        raise ValueError("URN must be a non-empty string")
    if urn.startswith(DATASET_PREFIX):
        return _parse_dataset(urn)
    if not urn.startswith(FIELD_PREFIX):
        raise ValueError(f"URN {urn!r} must start with {DATASET_PREFIX!r} or {FIELD_PREFIX!r}")
    parts = _tuple_parts(urn, FIELD_PREFIX)
    if len(parts) != 2:
        raise ValueError(f"field URN {urn!r} must have 2 parts (dataset URN, field path), found {len(parts)}")
    parent, path = parts
    if not path:
        raise ValueError(f"field URN {urn!r}: the field path is empty")
    return FieldUrn(_parse_dataset(parent), decode(path))


@dataclass(frozen=True)
class UrnIndex:
    """Known datasets by dataset URN, the way back from a URN to a node. A URN loses what the
    converter drops (host, port), so two datasets can share one (`postgres://a:5432` and
    `postgres://b:5432` both holding `db.public.t`): resolving such a URN raises a ValueError
    naming both rather than picking one."""

    datasets: Mapping[str, tuple[Name, ...]]

    @classmethod
    def build(cls, datasets: Iterable[Name], config: DataHubConfig = DEFAULT_CONFIG) -> UrnIndex:
        by_urn: dict[str, set[Name]] = {}
        for namespace, name in datasets:
            by_urn.setdefault(dataset_urn(namespace, name, config), set()).add((namespace, name))
        return cls({urn: tuple(sorted(names)) for urn, names in by_urn.items()})

    def resolve(self, urn: str) -> tuple[str, str, str | None] | None:
        """(namespace, name, field path in v1 form or None) of a URN; None when no known dataset
        has it; ValueError when it is malformed or ambiguous."""
        parsed = parse_urn(urn)
        dataset = parsed.dataset if isinstance(parsed, FieldUrn) else parsed
        known = self.datasets.get(dataset.urn)  # re-encoded: any hex case of an escape matches
        if not known:
            return None
        if len(known) > 1:
            names = " and ".join(f"{ns!r} {name!r}" for ns, name in known)
            raise ValueError(f"URN {urn!r} is ambiguous: it names the datasets {names}")
        namespace, name = known[0]
        return namespace, name, normalise_path(parsed.path) if isinstance(parsed, FieldUrn) else None


# ---------------------------------------------------------------------------------------------
# Field paths.
#
# OpenLineage describes nested types in the schema facet's `fields`
# (OpenLineage/OpenLineage website/docs/spec/facets/dataset-facets/schema.md): a struct's members;
# an array's one member `_element`; a map's members `key` and `value`; a union's members `_0`,
# `_1`, ... Producers may also give only a type string (`array<struct<a:int>>`,
# `map<string,int>`, `uniontype<...>`), parsed here as DataHub's HiveColumnToAvroConverter parses
# it (datahub-project/datahub metadata-ingestion/src/datahub/utilities/hive_schema_to_avro.py).
# The v2 paths are those DataHub's AvroToMceSchemaConverter emits for the same shape
# (metadata-ingestion/src/datahub/ingestion/extractor/schema_util.py, checked against
# metadata-ingestion/tests/unit/test_schema_util.py and docs/advanced/field-path-spec-v2.md):
# - the dataset is a record; without a name it is `struct` (DataHub's `__struct_` records show
#   as `[type=struct]`); an Avro-style full name shows its last dotted part;
# - a field emits the path of its type tokens followed by its name: `[type=string].a`, a record
#   field `[type=Rec].a` with its members under it, an array or map adds `[type=array]` /
#   `[type=map]` before its item or value type (a map's key has no path);
# - a union field emits `[type=union].a` and then each member's path (`[type=union].[type=A].a`);
#   `null` members are skipped and a two-member union with `null` is its other member (optional);
# - paths ending at an intermediate type (`[version=2.0].[type=E]`), listed in the spec document
#   but not emitted by the converter, are not fields and are not made.
# A type without a name is `null` (HiveColumnToAvroConverter maps unknown types to Avro `null`).
# OpenLineage facets are trees, so DataHub's guard against recursive record types is not needed.

V2_VERSION = "[version=2.0]"
V2_KEY = "[key=True]"
_CONTAINER = re.compile(r"(array|map|uniontype|union|struct)\b", re.IGNORECASE)


@dataclass(frozen=True)
class FieldPath:
    """One DataHub field path of a schema: `v1` dotted (`a.b`), `v2` typed
    (`[version=2.0].[type=struct].[type=Rec].a.[type=int].b`), and `ol_name`, the dotted name of
    the schema facet entry the project knows the field by (`a._element.b` for a member of an
    array's records). A union field has one v2 path per member, all with the same v1 and name."""

    v1: str
    v2: str
    ol_name: str


@dataclass(frozen=True)
class _Node:
    """A type: `kind` record | array | map | union | leaf; `label` its v2 token value; `children`
    (facet entry name or None when the facet has no entry for it, type) of its members, items or
    values."""

    kind: str
    label: str
    children: tuple[tuple[str | None, _Node], ...] = ()


def _kind(type_text: str | None) -> str | None:
    match = _CONTAINER.match(type_text.strip()) if type_text else None
    if match is None:
        return None
    kind = match.group(1).lower()
    return "union" if kind == "uniontype" else kind


def _record(type_text: str | None, children: list[tuple[str | None, _Node]]) -> _Node:
    """A record: members deduplicated by name (the first wins), labelled by its type's last
    dotted part unless it is an anonymous struct."""
    text = (type_text or "").strip()
    anonymous = not text or _kind(text) == "struct" or text.lower() == "record"
    members: dict[str | None, _Node] = {}
    for name, child in children:
        members.setdefault(name, child)
    return _Node("record", "struct" if anonymous else text.rsplit(".", 1)[-1], tuple(members.items()))


def _split_top(text: str, separator: str) -> list[str] | None:
    """`text` split at `separator` outside brackets; None when brackets do not pair."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
            if depth < 0:
                return None
        elif c == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth != 0:
        return None
    parts.append(text[start:].strip())
    return parts


def _parse_type(text: str) -> _Node | None:
    """The node of a Hive/Spark type string; None when it is malformed."""
    kind = _kind(text)
    if kind is None or "<" not in text:
        return _Node("leaf", text) if text else None
    head, _, rest = text.partition("<")
    if not rest.endswith(">") or head.strip().lower() not in ("array", "map", "struct", "union", "uniontype"):
        return None
    parts = _split_top(rest[:-1], ",")
    if parts is None or not all(parts):
        return None
    if kind == "array":
        item = _parse_type(parts[0]) if len(parts) == 1 else None
        return _Node("array", "array", (("_element", item),)) if item else None
    if kind == "map":
        value = _parse_type(parts[1]) if len(parts) == 2 else None
        return _Node("map", "map", (("value", value),)) if value else None
    members = [_parse_type(p) for p in parts]
    if kind == "union":
        return _Node("union", "union", tuple((f"_{i}", m) for i, m in enumerate(members))) if all(members) else None
    fields = []
    for part in parts:
        name_type = _split_top(part, ":")
        if name_type is None or len(name_type) != 2 or not name_type[0]:
            return None
        member = _parse_type(name_type[1])
        if member is None:
            return None
        fields.append((name_type[0].strip("`"), member))
    return _record(text, fields)


def _entry_node(entry: Mapping) -> _Node:
    """The node of one schema facet entry: from its nested `fields` when it has any, else from
    its type string (a leaf when that does not parse)."""
    type_text = entry.get("type") if isinstance(entry.get("type"), str) else None
    members = [(m["name"], _entry_node(m)) for m in _entries(entry.get("fields"))]
    if not members:
        text = (type_text or "").strip()
        return _parse_type(text) or _Node("leaf", text or "null")
    kind = _kind(type_text)
    named = dict(members)
    if kind in ("array", "map"):  # its `_element` / `value`, else the members of that record
        inner = "_element" if kind == "array" else "value"
        child = (inner, named[inner]) if inner in named else (None, _record(None, members))
        return _Node(kind, kind, (child,))
    if kind == "union":
        return _Node("union", "union", tuple(members))
    return _record(type_text, members)


def _entries(fields: object) -> list[Mapping]:
    """The well-formed entries (objects with a string name) of a `fields` list."""
    if not isinstance(fields, list):
        return []
    return [f for f in fields if isinstance(f, Mapping) and isinstance(f.get("name"), str) and f["name"]]


def _join(prefix: str, name: str | None) -> str:
    if name is None:
        return prefix
    return f"{prefix}.{name}" if prefix else name


def _walk(node: _Node, ol_name: str, tokens: tuple[str, ...], holder: tuple[str, str], out: list[FieldPath]) -> None:
    """Append the paths of `node`, the type of the field `holder` (its name, its facet name)
    reached through the v2 `tokens`; `ol_name` is the facet name of `node` itself."""

    def emit(path: tuple[str, ...]) -> None:
        v2 = ".".join(path)
        out.append(FieldPath(normalise_path(v2), v2, holder[1]))

    if node.kind == "union":
        kept = [(n, m) for n, m in node.children if not (m.kind == "leaf" and m.label.lower() == "null")]
        if len(node.children) == 2 and len(kept) == 1:  # an optional value: its other member
            name, member = kept[0]
            _walk(member, _join(ol_name, name), tokens, holder, out)
            return
    here = tokens + (f"[type={node.label}]",)
    if node.kind == "record":
        emit(here + (holder[0],))
        _walk_members(node, ol_name, here + (holder[0],), out)
    elif node.kind in ("array", "map"):
        for name, child in node.children:
            _walk(child, _join(ol_name, name), here, holder, out)
    elif node.kind == "union":
        emit(here + (holder[0],))
        for name, member in kept:
            _walk(member, _join(ol_name, name), here, holder, out)
    else:
        emit(here + (holder[0],))


def _walk_members(record: _Node, ol_name: str, tokens: tuple[str, ...], out: list[FieldPath]) -> None:
    """Append the paths of a record's members, each a field under `tokens`."""
    for name, child in record.children:
        _walk(child, _join(ol_name, name), tokens, (name, _join(ol_name, name)), out)


def field_paths(schema_fields: list[dict], record: str = "struct", key: bool = False) -> list[FieldPath]:
    """Every DataHub field path of a schema facet's `fields`, in DataHub's order (depth first).
    `record` names the dataset's record type and `key` marks a key schema (`[key=True]`); the
    defaults are what an OpenLineage schema is: an anonymous value record."""
    top = _record(record, [(e["name"], _entry_node(e)) for e in _entries(schema_fields)])
    tokens = (V2_VERSION, V2_KEY) if key else (V2_VERSION,)
    out: list[FieldPath] = []
    _walk_members(top, "", tokens + (f"[type={top.label}]",), out)
    return out


def normalise_path(path: str) -> str:
    """A v2 field path in v1 form, a v1 path unchanged. As DataHub's own downgrade
    (datahub-project/datahub metadata-ingestion/src/datahub/utilities/urns/field_paths.py,
    get_simple_field_path_from_v2_field_path): a path starting with `[version=2.0]` keeps its
    dot-separated tokens that neither start with `[` nor end with `]`."""
    if not path.startswith(V2_VERSION):
        return path
    return ".".join(t for t in path.split(".") if not (t.startswith("[") or t.endswith("]")))


def resolve_field(paths: Iterable[FieldPath], path: str) -> str | None:
    """The facet name of the field a DataHub path (v1 or v2) names in a schema, None if none.
    A v2 path names its own field; a v1 path, or a v2 path the schema does not hold, names the
    field with that v1 form. v1 cannot tell apart members of a union that have a field of one
    name (`u._0.f` and `u._1.f` are both `u.f`): such a path is a ValueError naming their v2
    paths, not the first of them (the two forms of one path must name one field)."""
    paths = list(paths)
    for p in paths:
        if p.v2 == path:
            return p.ol_name
    named = _fields_by_v1(paths).get(normalise_path(path), {})
    if len(named) > 1:
        raise ValueError(
            f"field path {path!r} names {len(named)} fields (union members with one name): give its v2 path, "
            f"one of {[p.v2 for p in named.values()]}"
        )
    return next(iter(named), None)


def shared_v1_paths(paths: Iterable[FieldPath]) -> set[str]:
    """The v1 paths that name more than one field of a schema (`resolve_field`)."""
    return {v1 for v1, fields in _fields_by_v1(paths).items() if len(fields) > 1}


def _fields_by_v1(paths: Iterable[FieldPath]) -> dict[str, dict[str, FieldPath]]:
    """v1 path -> the fields it names (facet name -> its first path): one field may have several
    paths (a union's own), and members of a union with one field name share a v1 path."""
    out: dict[str, dict[str, FieldPath]] = {}
    for p in paths:
        out.setdefault(p.v1, {}).setdefault(p.ol_name, p)
    return out
