"""The reference server's fixtures, folded as they are (read in place from ../shared).

One module fixture folds the listener pair, the apples and the food_delivery seed together; they
share no job or dataset, so each scenario is checked on its own.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque

import pytest

from lineage_assets import LineageQuery
from lineage_assets_tests.support import fold_stream, publish_current

pytestmark = pytest.mark.fixtures


def _load(fixtures_dir):
    listener = [json.loads((fixtures_dir / "marquez/open_lineage/listener" / f"{i}.json").read_text()) for i in (1, 2)]
    apples = {p.name: json.loads(p.read_text()) for p in sorted((fixtures_dir / "marquez/apples").glob("*.json"))}
    food = [json.loads(line) for line in (fixtures_dir / "marquez/food_delivery.ndjson").read_text().splitlines() if line.strip()]
    return listener, apples, food


@pytest.fixture(scope="module")
def fixture_fold(spark, fixtures_dir, tmp_path_factory):
    listener, apples, food = _load(fixtures_dir)
    folded = fold_stream(spark, [*listener, *apples.values(), *food])
    warehouse = tmp_path_factory.mktemp("fixture_wh")
    publish_current(spark, folded.state, str(warehouse))
    return folded, listener, apples, food, LineageQuery(str(warehouse))


def test_listener_pair_is_one_run_with_three_inputs_and_two_outputs(fixture_fold):
    folded, listener, *_ = fixture_fold
    run_id = listener[0]["run"]["runId"]
    [run] = [r for r in folded.runs if r["run_id"] == run_id]
    expected_in = sorted({i["name"] for e in listener for i in e["inputs"]})
    expected_out = sorted({o["name"] for e in listener for o in e["outputs"]})
    assert [i["name"] for i in run["inputs"]] == expected_in and len(expected_in) == 3
    assert [o["name"] for o in run["outputs"]] == expected_out and len(expected_out) == 2
    assert run["state"] == "COMPLETE" and run["event_count"] == 2
    assert str(run["end_date"]) == "2020-12-29"  # 2.json's +10:00 time is 09:52 UTC on the 29th


def _version_counts_implied(apples: dict) -> dict[str, int]:
    """Distinct (inputs, outputs) per job in the apples files: what the README's story implies."""
    seen = defaultdict(set)
    for event in apples.values():
        io = (tuple(sorted(i["name"] for i in event["inputs"])), tuple(sorted(o["name"] for o in event["outputs"])))
        seen[event["job"]["name"]].add(io)
    return {job: len(ios) for job, ios in seen.items()}


def test_apples_give_the_job_versions_their_readme_implies(fixture_fold):
    folded, _listener, apples, *_ = fixture_fold
    apple_jobs = {e["job"]["name"] for e in apples.values()}
    counts = defaultdict(int)
    for version in folded.job_versions:
        if version["job_name"] in apple_jobs:
            counts[version["job_name"]] += 1
    assert dict(counts) == _version_counts_implied(apples)
    assert counts["gather_apples"] == 2 and counts["prepare_apple_filling"] == 2 and counts["prepare_apple_pie"] == 1


def test_the_second_pie_was_made_from_the_crab_apple_filling(fixture_fold):
    folded, _listener, apples, *_ = fixture_fold
    lineage = {r["run_id"]: r for r in folded.run_lineage}
    runs = {name: e["run"]["runId"] for name, e in apples.items()}
    outputs = {rid: {o["name"]: o["version_id"] for o in lineage[rid]["output_versions"]} for rid in runs.values()}
    reads = lambda name: {i["name"]: i["version_id"] for i in lineage[runs[name]]["input_versions"]}  # noqa: E731
    assert reads("6_apple_pie.json")["apple.filling"] == outputs[runs["2_apple_filling.json"]]["apple.filling"]
    assert reads("9_apple_pie.json")["apple.filling"] == outputs[runs["8_apple_filling.json"]]["apple.filling"]
    assert reads("8_apple_filling.json")["apples"] == outputs[runs["7_pick_different_apples.json"]]["apples"]


def _expected_component(food: list[dict], start: str, depth: int) -> set[str]:
    """Independent BFS over the raw events: jobs linked by a shared dataset, `depth` job hops."""
    datasets_of = defaultdict(set)
    for e in food:
        job = f"job:{e['job']['namespace']}:{e['job']['name']}"
        for d in (e.get("inputs") or []) + (e.get("outputs") or []):
            datasets_of[job].add(f"dataset:{d['namespace']}:{d['name']}")
    jobs_of = defaultdict(set)
    for job, datasets in datasets_of.items():
        for d in datasets:
            jobs_of[d].add(job)
    seen, queue = {start: 0}, deque([start])
    while queue:
        job = queue.popleft()
        if seen[job] == depth:
            continue
        for d in datasets_of[job]:
            for other in jobs_of[d]:
                if other not in seen:
                    seen[other] = seen[job] + 1
                    queue.append(other)
    return set(seen) | {d for j in seen for d in datasets_of[j]}


@pytest.mark.parametrize("depth", [0, 1, 2, 20])
def test_food_delivery_lineage_from_every_job(fixture_fold, depth):
    *_, food, query = fixture_fold
    jobs = sorted({f"job:{e['job']['namespace']}:{e['job']['name']}" for e in food})
    assert len(jobs) == 13
    for job in jobs:
        graph = query.lineage(job, depth=depth)
        assert graph.ids == _expected_component(food, job, depth), job
    whole = query.lineage(jobs[0], depth=20)
    components = {n.data["componentId"] for n in whole.graph}
    assert components == {min(whole.ids)}
