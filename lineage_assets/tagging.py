"""Setting and removing field tags: a DatasetEvent with the `tags` facet, dropped into the drop
folder with the OpenLineage client's file transport (DESIGN.md section 9). The pipeline stays
the only writer of the warehouse; the tag reaches `field_tags` when the drop is processed.

A dataset's tags are those of its newest tags facet, so each event carries the whole set: the
newest set known (the warehouse's, or that of a tag event in the drop folder not processed yet,
whichever is newer) with the one change applied.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import DatasetEvent, StaticDataset
from openlineage.client.facet_v2 import tags_dataset
from openlineage.client.transport.file import FileConfig, FileTransport

from lineage_assets.intake.validate import parse_event_time
from lineage_assets.query.node_ids import candidates

PRODUCER = "https://github.com/lineage-assets/lineage_assets/tagging"
TAGS_FILE = Path("tags") / "tags.ndjson"


@dataclass(frozen=True)
class Tag:
    field: str | None
    key: str
    value: str | None
    source: str | None = None

    def as_dict(self) -> dict:
        return {"key": self.key, "value": self.value, "source": self.source, "field": self.field}


def parse_assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def resolve_target(node: str, warehouse: str | None) -> tuple[str, str, str | None]:
    """(namespace, name, field or None) a `dataset:` or `datasetField:` node id names. An id the
    colons let read several ways is settled by the datasets the warehouse knows."""
    refs = [r for r in candidates(node) if r.kind in ("dataset", "datasetField")]
    if not refs:
        raise ValueError(f"a tag is set on a dataset or a field, not {node!r}")
    why = ""
    if len(refs) > 1:
        if warehouse and Path(warehouse).is_dir():
            from lineage_assets import LineageQuery

            with LineageQuery(warehouse) as query:
                known = [r for r in refs if query.knows_dataset(r.namespace, r.name)]
            why = "" if known else f" and none of them names a dataset the warehouse {warehouse} knows"
            refs = known or refs
        else:
            why = f" (the warehouse {warehouse} that would settle it does not exist)" if warehouse else ""
    if len(refs) != 1:
        shown = refs if len(refs) <= 10 else refs[:9]
        readings = "; ".join(" | ".join(p for p in (r.namespace, r.name, r.field) if p) for r in shown)
        more = f"; and {len(refs) - len(shown)} more" if len(shown) < len(refs) else ""
        raise ValueError(f"{node!r} can be read {len(refs)} ways{why} ({readings}{more}); give --namespace, --name (and --field)")
    ref = refs[0]
    return ref.namespace, ref.name, ref.field


def _pending(drop_dir: str | Path, namespace: str, name: str) -> tuple[str | None, list[Tag]]:
    """The newest tag event for the dataset in the drop folder's tags file: (eventTime, tags)."""
    path = Path(drop_dir) / TAGS_FILE
    newest: tuple[str | None, list[Tag]] = (None, [])
    if not path.exists():
        return newest
    newest_at = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
            dataset = event["dataset"]
            at = _instant(event.get("eventTime"))
        except (ValueError, KeyError, TypeError):
            continue  # not a tag event this command wrote: the intake reports it
        if (dataset.get("namespace"), dataset.get("name")) != (namespace, name):
            continue
        entries = ((dataset.get("facets") or {}).get("tags") or {}).get("tags") or []
        if newest_at is None or at >= newest_at:
            newest_at = at
            newest = (event.get("eventTime"), [Tag(e.get("field"), e["key"], e.get("value"), e.get("source"))
                                               for e in entries if e.get("key")])
    return newest


def _known(warehouse: str | None, namespace: str, name: str) -> tuple[str | None, list[Tag]]:
    if not warehouse or not Path(warehouse).is_dir():
        return None, []
    from lineage_assets import LineageQuery, NodeNotFound

    with LineageQuery(warehouse) as query:
        try:
            found = query.dataset_tags(namespace, name)
        except NodeNotFound:  # a dataset the warehouse does not know yet has no tags there
            return None, []
    return found.asOf, [Tag(t.field, t.key, t.value, t.source) for t in found.tags]


def _instant(value: str | None) -> dt.datetime:
    """An eventTime or `asOf` as the intake reads it (no time: before any)."""
    return parse_event_time(value) if value else dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def change_tag(drop_dir: str | Path, warehouse: str | None, namespace: str, name: str, field: str | None, key: str,
               value: str | None = None, *, remove: bool = False, source: str = "lineage-assets",
               now: dt.datetime | None = None) -> list[Tag]:
    """Write the DatasetEvent that sets (or removes) one tag; returns the dataset's tags it states."""
    if not key:
        raise ValueError("a tag needs a key")
    known_at, known = _known(warehouse, namespace, name)
    pending_at, pending = _pending(drop_dir, namespace, name)
    base = pending if pending_at is not None and _instant(pending_at) >= _instant(known_at) else known
    tags = [t for t in base if not (t.field == field and t.key == key)]
    if remove and len(tags) == len(base):
        raise ValueError(f"{namespace} {name}{' :: ' + field if field else ''} has no tag {key!r}")
    if not remove:
        tags.append(Tag(field, key, value, source))
    tags.sort(key=lambda t: (t.field or "", t.key))
    at = (now or dt.datetime.now(dt.timezone.utc)).isoformat()
    path = Path(drop_dir) / TAGS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(path), append=True)))
    facet = tags_dataset.TagsDatasetFacet(tags=[
        tags_dataset.TagsDatasetFacetFields(key=t.key, value=t.value if t.value is not None else "", source=t.source, field=t.field)
        for t in tags])
    client.emit(DatasetEvent(eventTime=at, producer=PRODUCER,
                             dataset=StaticDataset(namespace=namespace, name=name, facets={"tags": facet})))
    return tags
