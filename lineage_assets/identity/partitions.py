"""Partition rules: a dataset name that differs from another only by a partition part names the
same dataset (DESIGN.md section 10). `fold_name` strips the partition and returns it.

A rule is a regular expression (Python's `re`) over the dataset's name whose group 1 is the
dataset's name and group 2 the partition. One implementation serves every caller: the fold runs
it in the Python that coalesces runs (`identity.resolver.Identity`), the query helper and the CLI
call it directly.

Rules apply in order, each to what the previous ones left, in passes until a pass strips
nothing (a folded name folds no further); the partitions they strip are joined with "/" in the
order they appear in the name. A rule's scope is `path` (only names
in a file-system namespace: `s3://`, `gs://`, `hdfs://`, `abfss://`, `file`, ..., or a name
starting with "/") or `any`. So by default a table called `sales_20240101` in a database is not
folded (a date suffix is only a partition in a path), while `table$20240101` (a partition
decorator) is folded wherever it appears.

Configure with LINEAGE_PARTITION_RULES: a JSON file `{"defaults": true, "rules": [{"name",
"pattern", "scope", "description"}]}`; its rules run before the defaults, or alone with
`"defaults": false`. `lineage-assets partition-rules` prints the rules in force.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

SCOPES = ("path", "any")
PATH_SCHEMES = frozenset({
    "file", "s3", "s3a", "s3n", "gs", "gcs", "hdfs", "webhdfs", "viewfs", "abfs", "abfss", "wasb", "wasbs",
    "adl", "dbfs", "oss", "cos", "r2", "minio",
})

_DAY = r"(?:19|20)\d\d{sep}(?:0[1-9]|1[0-2]){sep}(?:0[1-9]|[12]\d|3[01])"


@dataclass(frozen=True)
class PartitionRule:
    name: str
    pattern: str  # group 1: the dataset's name, group 2: the partition
    scope: str  # "path" | "any"
    description: str
    example: str = ""  # a name the rule folds (shown by the CLI, checked by the tests)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"partition rule {self.name!r}: scope must be one of {SCOPES}, got {self.scope!r}")
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"partition rule {self.name!r}: pattern {self.pattern!r} is not a regular expression: {exc}") from exc
        if compiled.groups != 2:
            raise ValueError(
                f"partition rule {self.name!r}: pattern must have exactly two groups (the name, the partition), "
                f"has {compiled.groups}; write other groups as (?:...)"
            )


DEFAULT_RULES: tuple[PartitionRule, ...] = (
    PartitionRule(
        "key_value", r"^(.*?[^/])((?:/[^/=]+=[^/]*)+)/?$", "path",
        "trailing key=value path segments (Hive-style partitions)", "s3://lake/events/date=2024-01-01/hour=05/",
    ),
    PartitionRule(
        "date_path", r"^(.*[^/])/(" + _DAY.format(sep="/") + r"(?:/(?:[01]\d|2[0-3]))?)/?$", "path",
        "trailing /YYYY/MM/DD (optionally /HH) path segments", "gs://logs/app/2024/01/31/",
    ),
    PartitionRule(
        "date_suffix", r"^(.*[^_/])_(" + _DAY.format(sep="") + r")/?$", "path",
        "a _YYYYMMDD suffix of the last path segment", "/data/exports/orders_20240131",
    ),
    PartitionRule(
        "date_suffix_underscored", r"^(.*[^_/])_(" + _DAY.format(sep="_") + r")/?$", "path",
        "a _YYYY_MM_DD suffix of the last path segment", "/data/exports/orders_2024_01_31",
    ),
    PartitionRule(
        "decorator", r"^([^$]*[^$/])\$([^$/]+)$", "any",
        "a $partition decorator (BigQuery: table$20240131)", "project.dataset.table$20240131",
    ),
)


def is_path(namespace: str, name: str) -> bool:
    """Whether a dataset lives in a file system: its namespace's scheme is one (`s3://bucket`,
    `file`, `hdfs://host:8020`), or its name is an absolute path."""
    scheme = namespace.split("://", 1)[0].split(":", 1)[0].lower()
    return scheme in PATH_SCHEMES or name.startswith("/")


def fold_name(namespace: str, name: str, rules: tuple[PartitionRule, ...] = DEFAULT_RULES) -> tuple[str, str | None]:
    """(the dataset's name without its partition, the partition or None). The rules are applied
    in passes until one strips nothing, so a folded name folds no further: in
    `events/region=eu/2024/01/31` the dates go in the first pass and `region=eu` in the second."""
    path = is_path(namespace, name)
    parts: list[str] = []
    shrank = True
    while shrank:  # each strip shortens the name, so this ends
        shrank = False
        for rule in rules:
            if rule.scope == "path" and not path:
                continue
            match = re.match(rule.pattern, name)
            if match and len(match.group(1)) < len(name):
                name = match.group(1)
                parts.insert(0, match.group(2).strip("/"))
                shrank = True
    return name, ("/".join(parts) if parts else None)


# ---------------------------------------------------------------------------------- configuration

ENV = "LINEAGE_PARTITION_RULES"


def load_rules(environ: dict[str, str] | None = None) -> tuple[PartitionRule, ...]:
    """The rules in force: LINEAGE_PARTITION_RULES (a JSON file) before the defaults, or alone."""
    env = os.environ if environ is None else environ
    location = env.get(ENV, "").strip()
    if not location:
        return DEFAULT_RULES
    try:
        spec = json.loads(Path(location).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{ENV}={location!r} cannot be read: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{ENV}={location!r} is not JSON: {exc}") from exc
    return rules_from_spec(spec, where=f"{ENV}={location!r}")


def rules_from_spec(spec: object, where: str = "partition rules") -> tuple[PartitionRule, ...]:
    if not isinstance(spec, dict) or not isinstance(spec.get("rules", []), list):
        raise ValueError(f"{where}: expected an object {{\"defaults\": true, \"rules\": [...]}}")
    unknown = set(spec) - {"defaults", "rules"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    rules = []
    for index, item in enumerate(spec.get("rules", [])):
        if not isinstance(item, dict) or not {"name", "pattern"} <= set(item):
            raise ValueError(f"{where}: rule {index} needs at least a name and a pattern")
        extra = set(item) - {"name", "pattern", "scope", "description", "example"}
        if extra:
            raise ValueError(f"{where}: rule {item.get('name', index)!r} has unknown keys {sorted(extra)}")
        rules.append(PartitionRule(
            str(item["name"]), str(item["pattern"]), str(item.get("scope", "path")), str(item.get("description", "")),
            str(item.get("example", "")),
        ))
    defaults = spec.get("defaults", True)
    if not isinstance(defaults, bool):
        raise ValueError(f"{where}: defaults must be true or false")
    names = [r.name for r in rules] + ([r.name for r in DEFAULT_RULES] if defaults else [])
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{where}: rule names must be unique, repeated: {repeated}")
    return (*rules, *(DEFAULT_RULES if defaults else ()))


def describe(rules: tuple[PartitionRule, ...]) -> list[dict]:
    """The rules as the CLI prints them, each with what it does to its example."""
    out = []
    for rule in rules:
        item = asdict(rule)
        if rule.example:
            item["example_folds_to"] = list(fold_name("s3://bucket" if rule.scope == "path" else "bigquery", rule.example, (rule,)))
        out.append(item)
    return out
