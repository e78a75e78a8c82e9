"""Coalesce all events of one runId into one run (DESIGN.md section 4, "Runs").

Inputs and outputs are the union over the run's events; facets are combined by facet name per
entity (run, job, each dataset), the last instance by eventTime winning. Events that name another
job than the run's earliest event are set aside as `job_mismatch`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from lineage_assets.identity.aliases import micros
from lineage_assets.identity.resolver import Identity
from lineage_assets.ids import canonical_json

TERMINAL = ("COMPLETE", "FAIL", "ABORT")
JOB_RULE_FACETS = ("jobType", "sourceCodeLocation", "sourceCode")  # the job facets a streaming item's rules read


def _order(event: dict) -> tuple:
    return (event["event_time"], event["event_id"])


def merge_facet_texts(texts: list[str | None]) -> str:
    """Facets (JSON objects as canonical text, in event order) combined by facet name, the last
    instance winning, as canonical text. A facet sent as `null` is absent (README: Intake): it
    neither replaces an earlier instance nor appears in the result. One distinct non-empty text
    with no null in it is returned as it is: the common case (a facet sent once, or repeated
    unchanged) costs no parsing."""
    present = [text for text in texts if text and text != "{}"]
    if not present:
        return "{}"
    if "null" not in present[-1] and all(text == present[-1] for text in present):
        return present[-1]
    merged: dict[str, Any] = {}
    for text in present:
        merged.update((name, value) for name, value in json.loads(text).items() if value is not None)
    return canonical_json(merged)


def _merge_datasets(events: list[dict], key: str, as_text: bool = False, identity: Identity | None = None, at: int | None = None) -> list[dict]:
    """The union of the events' datasets under `key`, each dataset once with its facets merged.
    With an `identity`, datasets are first resolved to their canonical dataset as of `at`: the
    entries of one dataset (several partitions, a path and its table) merge into one, which keeps
    the partitions named and the names reported (`RUN_DATASET`)."""
    texts: dict[tuple[str, str], tuple[list, list, set, set]] = {}
    resolved: dict[tuple[str, str], tuple[str, str, str | None]] = {}  # one `at` per call: each name resolved once
    for event in events:
        for item in event.get(key) or ():
            if identity is None:
                namespace, name, partition, named = item["namespace"], item["name"], item.get("partition"), item.get("reported")
            else:  # its canonical dataset; `reported`: the name it was reported by, when that differs
                named = (item["namespace"], item["name"])
                found = resolved.get(named)
                if found is None:
                    found = resolved[named] = identity.resolve(named[0], named[1], at)
                namespace, name, partition = found
                if named == (namespace, name):
                    named = None
            facets, io_facets, partitions, reported = texts.setdefault((namespace, name), ([], [], set(), set()))
            facets.append(item["facets"])
            io_facets.append(item["io_facets"])
            if partition is not None:
                partitions.add(partition)
            if named is not None:
                reported.add(named)
    out = []
    for (ns, name), (facets, io_facets, partitions, reported) in sorted(texts.items()):
        merged = (merge_facet_texts(facets), merge_facet_texts(io_facets))
        if not as_text:
            merged = tuple(json.loads(m) for m in merged)
        item = {"namespace": ns, "name": name, "facets": merged[0], "io_facets": merged[1]}
        if identity is not None:
            item["partitions"] = sorted(partitions)
            item["reported"] = [{"namespace": a, "name": b} for a, b in sorted(reported)]
        out.append(item)
    return out


def code_version(job_facets: dict[str, Any]) -> str | None:
    """sourceCodeLocation.version, else .url, else sha256 of sourceCode.sourceCode, else null."""
    location = job_facets.get("sourceCodeLocation") or {}
    if isinstance(location, dict):
        if location.get("version"):
            return str(location["version"])
        if location.get("url"):
            return str(location["url"])
    source = job_facets.get("sourceCode") or {}
    if isinstance(source, dict) and source.get("sourceCode"):
        return hashlib.sha256(str(source["sourceCode"]).encode("utf-8")).hexdigest()
    return None


def _canonical_uuid(value: Any) -> str | None:
    """A runId as the run_id column holds it (lowercase 8-4-4-4-12), so a parent named in
    capitals still finds its run; the intake has checked it is a UUID."""
    try:
        return str(uuid.UUID(value)) if isinstance(value, str) else None
    except ValueError:
        return None


def _parent_ids(run_facets: dict[str, Any]) -> tuple[str | None, str | None]:
    parent = run_facets.get("parent")
    if not isinstance(parent, dict):
        return None, None
    parent_id = _canonical_uuid((parent.get("run") or {}).get("runId"))
    root = (parent.get("root") or {}).get("run") or {}
    return parent_id, _canonical_uuid(root.get("runId")) or parent_id


def is_streaming(job_facets: dict[str, Any]) -> bool:
    job_type = job_facets.get("jobType") or {}
    return isinstance(job_type, dict) and str(job_type.get("processingType", "")).upper() == "STREAMING"


def _split_by_job(events: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the kept events, the mismatched ones) of one runId, each in event order: kept are those
    naming the job of the run's earliest event."""
    ordered = sorted(events, key=_order)
    job = (ordered[0]["job_namespace"], ordered[0]["job_name"])
    kept = [e for e in ordered if (e["job_namespace"], e["job_name"]) == job]
    return kept, [e for e in ordered if (e["job_namespace"], e["job_name"]) != job]


def coalesce_run(events: list[dict], as_text: bool = False, identity: Identity | None = None) -> tuple[dict, list[dict]]:
    """(the run, the events rejected as job_mismatch). The run's `state` is None while it is open.
    Facets come back as dicts, or with `as_text` as canonical JSON text (what the fold stores).
    With an `identity`, the run's datasets are canonical datasets resolved as of its end (its
    last event while it is open)."""
    kept, mismatched = _split_by_job(events)
    return _run_of(kept, as_text, identity), mismatched


def _run_of(kept: list[dict], as_text: bool, identity: Identity | None) -> dict:
    """The run of its kept events (`_split_by_job`), as `coalesce_run` describes."""
    job = (kept[0]["job_namespace"], kept[0]["job_name"])
    run_text = merge_facet_texts([e["run_facets"] for e in kept])
    job_text = merge_facet_texts([e["job_facets"] for e in kept])
    # canonical texts: a facet the rules below read is named literally in them, so text without
    # the name needs no parsing when only text is returned (most runs' job facets)
    run_facets: dict[str, Any] = json.loads(run_text) if not as_text or '"parent"' in run_text else {}
    job_facets: dict[str, Any] = json.loads(job_text) if not as_text or '"sourceCode' in job_text or '"jobType"' in job_text else {}
    terminal = [e for e in kept if e["event_type"] in TERMINAL]
    starts = [e for e in kept if e["event_type"] == "START"]
    last = terminal[-1] if terminal else None
    parent_id, root_id = _parent_ids(run_facets)
    at = micros((last or kept[-1])["event_time"]) if identity is not None else None
    return {
        "run_id": kept[0]["run_id"],
        "job_namespace": job[0],
        "job_name": job[1],
        "state": last["event_type"] if last else None,
        "started_at": (starts[0] if starts else kept[0])["event_time"],
        "ended_at": last["event_time"] if last else None,
        "inputs": _merge_datasets(kept, "inputs", as_text, identity, at),
        "outputs": _merge_datasets(kept, "outputs", as_text, identity, at),
        "run_facets": run_text if as_text else run_facets,
        "job_facets": job_text if as_text else job_facets,
        "code_version": code_version(job_facets),
        "parent_run_id": parent_id,
        "root_run_id": root_id,
        "event_count": len(kept),
        "streaming": is_streaming(job_facets),
        "last_event_time": kept[-1]["event_time"],
    }


def coalesce_range(events: list[dict], first_day, identity: Identity | None = None) -> list[dict]:
    """All events of one runId that a fold of days from `first_day` on sees (the range's and the
    run's carried ones) as one run (DESIGN.md section 4): a run's events after its terminal
    event, on the same day or any later one, belong to it (a FAIL after a COMPLETE gives it its
    state; a later event's outputs join its union; one naming another job is a mismatch).

    The fold carries a run's events in its state until the day of its last event once it has
    ended (with how many it had), and a fold whose range holds new events of a run that ended
    before it starts from the day that run ended (`pipeline.fold.fold_start` before the fold, for
    runs it does not carry; `reopen` rows during it, for runs it does): so every event of a run
    is here whenever its row is written, and an ended run's events already folded (a RUNNING
    event after its COMPLETE, past midnight) start nothing again.

    Returns typed rows (`kind`):
    - `run`: the run, when one of its kept events is terminal (coalesce_run's run, with
      `end_date`: the UTC day of its last terminal event);
    - `open`: every kept event with `valid_to` (the day of the run's last event, mismatched or
      not, once it has ended; None while it has not) and `kept_events` (how many it keeps);
    - `reopen`: the run had ended before `first_day` when it was folded (a carried terminal event)
      and has new events (more kept events than when its row was written), a later terminal event
      among them or not: its row is before the range, so the fold must start at that end
      (`valid_to`);
    - `mismatch`: an event (dated >= first_day) naming another job than the run's earliest event;
    - `item`: an io-reporting or terminal event (dated >= first_day) of a run whose job facets as
      of that event (merged through it in event order) say STREAMING: a job-versioning item with
      the code version as of that event. Only the events up to it decide, so any grouping of days
      into folds agrees (a later event's jobType or code version changes no earlier item). A
      terminal event without inputs or outputs is an item that reported none (DESIGN.md section
      4: a run is versioned when it reaches a terminal event; rules 1, 3 and 4), so a streaming
      run that ends before naming a dataset (a Flink job failing at its start) has its job's
      version like any ended run.
    A run's datasets are resolved by `identity` (when given) as of the run's end.
    """
    kept, mismatched = _split_by_job(events)
    run = _run_of(kept, True, identity)
    out: list[dict] = [
        {"kind": "mismatch", "run_id": e["run_id"], "event_id": e["event_id"]} for e in mismatched if e["event_date"] >= first_day
    ]
    job = (run["job_namespace"], run["job_name"])
    as_of: dict[str, Any] = {}  # the job facets the rules read, merged through each event (nulls absent)
    for event in kept:
        text = event["job_facets"] or ""
        if '"jobType"' in text or '"sourceCode' in text:  # parse only what can change the flag or the code version
            as_of.update((name, value) for name, value in json.loads(text).items() if name in JOB_RULE_FACETS and value is not None)
        reports = event["inputs"] or event["outputs"] or event["event_type"] in TERMINAL
        if event["event_date"] >= first_day and reports and is_streaming(as_of):
            out.append({
                "kind": "item", "run_id": event["run_id"], "event_id": event["event_id"],
                "job_namespace": job[0], "job_name": job[1], "ended_at": event["event_time"],
                "state": event["event_type"] or "RUNNING", "code_version": code_version(as_of),
            })
    terminal = [e for e in kept if e["event_type"] in TERMINAL]
    end_date = terminal[-1]["event_date"] if terminal else None
    # an ended run's events are carried until the day of its last event, a mismatched one too (a later
    # fold reading it again must carry the run to tell that nothing is new)
    open_to = max(e["event_date"] for e in events) if terminal else None
    before = [e for e in terminal if e["event_date"] < first_day]  # carried: it had ended before the range when folded
    if before:  # its row was written on the day of its end then, before the range unless a later end was folded too
        written = {e.get("kept_events") for e in kept if e["event_date"] < first_day} - {None}
        if not written and end_date < first_day:
            raise ValueError(
                f"run {run['run_id']} ended on {end_date}, before the fold's first day {first_day}, and has events from "
                f"{first_day} on: a fold must start at the end of every run it has new events of (pipeline.fold.fold_start)"
            )
        if written and len(kept) > max(written):  # new events since its row was written (a later end too): start there
            return [{"kind": "reopen", "run_id": run["run_id"], "valid_to": before[-1]["event_date"]}]
        # its events after its end, already in its row (carried until the last of them): nothing changes
    if end_date is not None and end_date >= first_day:
        run.pop("last_event_time")
        out.append({"kind": "run", **run, "end_date": end_date})
    out.extend(
        {"kind": "open", "run_id": e["run_id"], "event_id": e["event_id"], "valid_to": open_to, "kept_events": len(kept)} for e in kept
    )
    return out
