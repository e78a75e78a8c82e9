"""Partition rules: a dataset name that differs from another only by a partition part names the
same dataset (DESIGN.md section 10). `fold_name` strips the partition and returns it.

A rule is a regular expression (Python's `re`) that matches the dataset's whole name, group 1
the dataset's name and group 2 the partition (both non-empty, or the rule does not apply); a
`dated` rule applies only when its partition is a real calendar day (its first eight digits,
YYYYMMDD). One implementation serves every caller: the fold runs
it in the Python that coalesces runs (`identity.resolver.Identity`), the query helper and the CLI
call it directly.

Rules apply in order, each to what the previous ones left, in passes until a pass strips
nothing (a folded name folds no further); the partitions they strip are joined with "/" in the
order they appear in the name. A rule's scope is `path` (only names
in a file-system namespace: `s3://`, `gs://`, `hdfs://`, `abfss://`, `file`, ..., or a name
starting with "/"; `is_path`) or `any`. So by default a table called `sales_20240101` in a
database is not folded (a date suffix is only a partition in a path), nor is one in the location
namespace Spark names its catalog tables in (`file:/tmp/warehouse` `default.sales_20240101`),
while `table$20240101` (a partition decorator) is folded wherever it appears. A path's trailing
slash is not part of its dataset (`events/` is `events`, as `events/date=2024-01-01/` is).

Configure with LINEAGE_PARTITION_RULES: a JSON file `{"defaults": true, "rules": [{"name",
"pattern", "scope", "description", "dated"}]}`; its rules run before the defaults, or alone with
`"defaults": false`. `lineage-assets partition-rules` prints the rules in force.
"""

from __future__ import annotations

import datetime as dt
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
    dated: bool = False  # the partition must be a real calendar day (`real_day`)

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
        "trailing /YYYY/MM/DD (optionally /HH) path segments", "gs://logs/app/2024/01/31/", dated=True,
    ),
    PartitionRule(
        "date_suffix", r"^(.*[^_/])_(" + _DAY.format(sep="") + r")/?$", "path",
        "a _YYYYMMDD suffix of the last path segment", "/data/exports/orders_20240131", dated=True,
    ),
    PartitionRule(
        "date_suffix_underscored", r"^(.*[^_/])_(" + _DAY.format(sep="_") + r")/?$", "path",
        "a _YYYY_MM_DD suffix of the last path segment", "/data/exports/orders_2024_01_31", dated=True,
    ),
    PartitionRule(
        "decorator", r"^([^$]*[^$/])\$([^$/]+)$", "any",
        "a $partition decorator (BigQuery: table$20240131)", "project.dataset.table$20240131",
    ),
)


def is_path(namespace: str, name: str) -> bool:
    """Whether a dataset's name is a path in a file system: its name is an absolute path, or its
    namespace is a file system (`s3://bucket`, `file`, `hdfs://host:8020`: a scheme of
    PATH_SCHEMES and at most an authority). A namespace that is a location inside a file system
    (`file:/tmp/warehouse`, `s3a://bucket/warehouse`) is where Spark names its catalog's tables
    (the TABLE identifier of a `symlinks` facet: `default.sales_20240101`): a name there is a path
    only when it holds a "/"."""
    if name.startswith("/"):
        return True
    scheme, _, rest = namespace.partition(":")
    if scheme.lower() not in PATH_SCHEMES:
        return False
    location = rest[2:].partition("/")[2] if rest.startswith("//") else rest.lstrip("/")
    return not location.strip("/") or "/" in name


def real_day(partition: str) -> bool:
    """Whether the first eight digits of `partition` (YYYYMMDD, whatever separates them) are a
    day of the calendar: `20240229` is, `20230229` and `2024/04/31` are not."""
    digits = "".join(c for c in partition if c.isdigit())[:8]
    try:
        dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:8]))
    except ValueError:
        return False
    return True


def fold_name(namespace: str, name: str, rules: tuple[PartitionRule, ...] = DEFAULT_RULES) -> tuple[str, str | None]:
    """(the dataset's name without its partition, the partition or None). The rules are applied
    in passes until one strips nothing, so a folded name folds no further: in
    `events/region=eu/2024/01/31` the dates go in the first pass and `region=eu` in the second.
    A path's trailing slashes are dropped first (`events/` is the dataset `events/date=.../`
    folds into)."""
    path = is_path(namespace, name)
    if path and len(name) > 1 and name.endswith("/"):
        name = name.rstrip("/") or "/"
    parts: list[str] = []
    shrank = True
    while shrank:  # each strip shortens the name, so this ends
        shrank = False
        for rule in rules:
            if rule.scope == "path" and not path:
                continue
            match = re.fullmatch(rule.pattern, name)
            if match is None or not match.group(1) or not match.group(2) or (rule.dated and not real_day(match.group(2))):
                continue
            if len(match.group(1)) < len(name):
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
        extra = set(item) - {"name", "pattern", "scope", "description", "example", "dated"}
        if extra:
            raise ValueError(f"{where}: rule {item.get('name', index)!r} has unknown keys {sorted(extra)}")
        rules.append(PartitionRule(
            str(item["name"]), str(item["pattern"]), str(item.get("scope", "path")), str(item.get("description", "")),
            str(item.get("example", "")), _flag(item.get("dated", False), f"{where}: rule {item['name']!r}: dated"),
        ))
    defaults = _flag(spec.get("defaults", True), f"{where}: defaults")
    names = [r.name for r in rules] + ([r.name for r in DEFAULT_RULES] if defaults else [])
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{where}: rule names must be unique, repeated: {repeated}")
    return (*rules, *(DEFAULT_RULES if defaults else ()))


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false, got {value!r}")
    return value


def describe(rules: tuple[PartitionRule, ...]) -> list[dict]:
    """The rules as the CLI prints them, each with what it does to its example."""
    out = []
    for rule in rules:
        item = asdict(rule)
        if rule.example:
            item["example_folds_to"] = list(fold_name("s3://bucket" if rule.scope == "path" else "bigquery", rule.example, (rule,)))
        out.append(item)
    return out
