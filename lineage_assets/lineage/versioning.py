"""The job-versioning fold (DESIGN.md section 4, rules 1-4), one job at a time.

A fold item is anything that versions a job: a terminal run, a runless JobEvent (its event_id
stands in for the run id), or an event of a streaming job that reports inputs or outputs.
Items are folded in order of (ended_at, run_id, event_id) against the job's current version: a
streaming run's items share its run id, and their events' ids order those at the same time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lineage_assets.ids import content_uuid

Dataset = tuple[str, str]


def version_content(job: Dataset, inputs, outputs, code_version: str | None, lineage_unknown: bool) -> dict:
    return {
        "job": [job[0], job[1]],
        "inputs": [[ns, name] for ns, name in sorted(set(map(tuple, inputs)))],
        "outputs": [[ns, name] for ns, name in sorted(set(map(tuple, outputs)))],
        "code_version": code_version,
        "lineage_unknown": bool(lineage_unknown),
    }


def version_id(content: dict) -> str:
    return content_uuid(content)


@dataclass
class JobState:
    """What the fold carries for a job from one day to the next."""

    job_namespace: str
    job_name: str
    version_id: str | None = None
    content: dict | None = None
    known_versions: list[str] = field(default_factory=list)  # every version id the job ever had
    latest_run_id: str | None = None
    latest_state: str | None = None
    latest_ended_at: Any = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict) -> "JobState":
        return cls(**data)


@dataclass(frozen=True)
class FoldItem:
    run_id: str
    ended_at: Any
    state: str
    inputs: list[Dataset]
    outputs: list[Dataset]
    code_version: str | None
    event_id: str | None = None  # a streaming item's event (its run's items share the run id)


def fold_job(state: JobState, items: list[FoldItem]) -> tuple[list[dict], dict[str, str], JobState]:
    """Fold items into the job's state.

    Returns (new version rows, {run_id: version_id the run belongs to}, new state).
    A version whose content the job had before keeps its id and is not a new row (A, B, A).
    """
    job = (state.job_namespace, state.job_name)
    known = set(state.known_versions)
    new_versions: list[dict] = []
    assignment: dict[str, str] = {}
    for item in sorted(items, key=lambda i: (i.ended_at, i.run_id, i.event_id or "")):
        reported = bool(item.inputs or item.outputs)
        current = state.content
        if current is None:
            content = version_content(job, item.inputs, item.outputs, item.code_version, not reported)
        elif reported:
            code = item.code_version if item.code_version is not None else current["code_version"]
            content = version_content(job, item.inputs, item.outputs, code, False)
        elif item.code_version is not None and item.code_version != current["code_version"]:
            content = {**current, "code_version": item.code_version, "lineage_unknown": True}
        else:
            content = current
        vid = version_id(content)
        if vid not in known:
            known.add(vid)
            new_versions.append(
                {
                    "job_namespace": job[0],
                    "job_name": job[1],
                    "version_id": vid,
                    "inputs": content["inputs"],
                    "outputs": content["outputs"],
                    "code_version": content["code_version"],
                    "lineage_unknown": content["lineage_unknown"],
                    "created_by_run_id": item.run_id,
                    "created_at": item.ended_at,
                }
            )
        state.version_id, state.content = vid, content
        state.latest_run_id, state.latest_state, state.latest_ended_at = item.run_id, item.state, item.ended_at
        assignment[item.run_id] = vid
    state.known_versions = sorted(known)
    return new_versions, assignment, state


def fold_job_by_day(state: JobState, items: list[FoldItem], day_of) -> tuple[list[dict], dict[str, str], list[tuple[Any, dict]]]:
    """fold_job over a range of days, one day at a time (items of a day in (ended_at, run_id,
    event_id) order, days in order): (new version rows, run -> version, [(day, the job's state at the end
    of that day)] for each day that had items). `day_of(item)` is the item's UTC day."""
    by_day: dict[Any, list[FoldItem]] = {}
    for item in items:
        by_day.setdefault(day_of(item), []).append(item)
    versions: list[dict] = []
    assignment: dict[str, str] = {}
    states: list[tuple[Any, dict]] = []
    for day in sorted(by_day):
        new, assigned, state = fold_job(state, by_day[day])
        versions.extend(new)
        assignment.update(assigned)
        states.append((day, state.to_dict()))
    return versions, assignment, states
