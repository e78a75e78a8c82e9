"""The fold's and the snapshot's blocking checks can fail: on a non-deterministic step and on a
wrong component id, and then nothing is committed (DESIGN.md sections 7 and 11)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

import pytest
from pyspark.sql import functions as F

from lineage_assets import LineageQuery
from lineage_assets.demo import platform
from lineage_assets.lineage import current as current_module
from lineage_assets.lineage import fold as fold_module
from lineage_assets.identity.partitions import load_rules
from lineage_assets.pipeline.checks import compare, sample_inputs
from lineage_assets.pipeline.fold import (
    DETERMINISM, WHOLE_CHECK_EVENTS, FoldReport, check_rate, fold_inputs, recompute_inputs, run_fold,
)
from lineage_assets.pipeline.snapshot import publish_current_graph
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as registry
from lineage_assets.warehouse.content_hash import WHOLE, Fingerprint
from lineage_assets_tests.support import chain_events, commit_events, run_event

SCHEDULE_SECONDS = 240  # measured (--durations); conftest runs long files first


def test_a_range_of_at_most_whole_check_events_is_recomputed_whole_whatever_the_rate():
    assert check_rate(WHOLE_CHECK_EVENTS, 0.1) == 1.0
    assert check_rate(0, 0.1) == 1.0
    assert check_rate(WHOLE_CHECK_EVENTS + 1, 0.1) == 0.1
    assert check_rate(WHOLE_CHECK_EVENTS + 1, 1.0) == 1.0
    assert check_rate(5 * WHOLE_CHECK_EVENTS, 0.3, whole_below=0) == 0.3


def test_the_determinism_check_fails_on_a_non_deterministic_step(spark, tmp_path, monkeypatch):
    """A step that is not deterministic (a random dataset version id where a content uuid
    belongs) fails the check when everything is recomputed (as it is, whatever the sample rate,
    for a range of at most WHOLE_CHECK_EVENTS events); then nothing is committed (the sampled
    check: the next test)."""
    root = str(tmp_path / "wh")
    events = []
    for j in range(12):  # twelve independent two-job chains
        events += [run_event("2024-05-01T01:00:00Z", "COMPLETE", f"w{j}", f"writer{j}", ["src"], [f"t{j}"]),
                   run_event("2024-05-01T02:00:00Z", "COMPLETE", f"r{j}", f"reader{j}", [f"t{j}"], [f"u{j}"])]
    commit_events(spark, root, events)
    before = commits.latest(root).seq
    day = dt.date(2024, 5, 1)
    monkeypatch.setattr(fold_module, "dataset_version_id", lambda *a: F.lit(str(uuid.uuid4())))
    bad = run_fold(spark, root, day, day, sample_rate=0.1, log=lambda _m: None)
    check = bad.check(DETERMINISM)
    assert bad.sample_rate == 1.0 and check.details["compared_rows"]["runs"] == bad.rows("runs") == 24
    assert not check.passed and any("dataset_versions" in p for p in check.problems)
    assert bad.commit_seq is None and commits.latest(root).seq == before
    # a rate that picks none of the 24 jobs (1 in 10,000): the sample takes the lowest in its order, so a
    # sampled check still compares something (before: it compared nothing and passed whatever the fold did)
    inputs = fold_inputs(spark, commits.latest(root), day, day, load_rules())
    sample, _events, _carried = sample_inputs(commits.latest(root), day, day, inputs.events, inputs.prev.open_events, 0.0001, inputs.names.identity)
    assert sample.cut > 1 and sample.runs.count() == 1  # the run of the job lowest in the sample order


def test_the_same_rows_under_another_day_fail_the_comparison():
    """The day (partition) column is not in a row's hash: a state row written with another
    `valid_to` has the same total as the recomputed one, and only its days tell (before: equal
    totals passed)."""
    row = Fingerprint("00000000000000aa", 1)
    written = {"state_open_events": {WHOLE: row, "2024-05-02": row}}
    recomputed = {"state_open_events": {WHOLE: row, "9999-12-31": row}}
    assert compare(written, recomputed) == ["state_open_events: the same rows under other days: ['2024-05-02', '9999-12-31']"]
    assert compare(written, written) == []


def test_the_sampled_check_follows_dataset_families_on_a_platform_stream(spark, tmp_path, monkeypatch):
    """On the platform generator's stream (lake paths named by their metastore tables through
    symlinks, so datasets have families of several names) a sampled check passes, compares part of
    every history table and not all of it, and fails on a non-deterministic step."""
    root = str(tmp_path / "wh")
    days = commit_events(spark, root, list(platform.iter_events(400, days=2, seed=3)))
    first, last = days[0], days[-1]
    before = commits.latest(root).seq
    real = fold_module.dataset_version_id
    monkeypatch.setattr(fold_module, "dataset_version_id", lambda *a: F.lit(str(uuid.uuid4())))
    bad = run_fold(spark, root, first, last, sample_rate=0.3, log=lambda _m: None, whole_check_events=0)
    check = bad.check(DETERMINISM)
    assert not check.passed and any("dataset_versions" in p for p in check.problems)
    assert bad.commit_seq is None and commits.latest(root).seq == before
    monkeypatch.setattr(fold_module, "dataset_version_id", real)
    from lineage_assets.pipeline import fold as pipeline_fold

    sized, real_settings = [], pipeline_fold.range_settings
    monkeypatch.setattr(pipeline_fold, "range_settings", lambda session, events: sized.append((session, events)) or real_settings(session, events))
    ok = run_fold(spark, root, first, last, sample_rate=0.3, log=lambda _m: None, whole_check_events=0)
    assert ok.passed and ok.commit_seq == before + 1, [c.problems for c in ok.checks]
    # the recompute runs in a session of its own (the fold's settings are not its): choosing the
    # sample reads the whole range, as the fold does; the sample's fold gets settings for its own size
    range_events = pipeline_fold.range_events(commits.latest(root), first, last)
    (fold_session, fold_events), (own, choosing), (own_again, sampled) = sorted(sized, key=lambda s: s[0] is not spark)
    assert (fold_session, fold_events, choosing) == (spark, range_events, range_events)
    assert own is own_again and own is not spark and own.sparkContext is spark.sparkContext
    assert 0 < sampled < range_events
    assert ok.rows("dataset_aliases") > 0  # the families are not just the names
    compared = ok.check(DETERMINISM).details["compared_rows"]
    for table in ("runs", "dataset_versions", "column_lineage", "dataset_fields", "state_jobs", "state_fields"):
        assert 0 < compared[table] < ok.rows(table), (table, compared[table], ok.rows(table))
    # a state table's written rows are hashed only where sampled; its count is the files' own
    committed = commits.latest(root)
    for table in ("state_jobs", "state_fields"):
        assert ok.rows(table) == sum(committed.row_counts(table, "valid_to", commits.on_or_after("valid_to", first)).values())
        assert table not in ok.fingerprints  # shown nowhere: only history tables' days are
    # the last day refolded carries the state as of the first: the recompute carries the sample's
    # part of it (`sample_state`: its jobs' state and column heads, its families' versions and
    # fields) and computes the sampled rows as the fold, which carried all of it, did
    inputs = fold_inputs(spark, committed, last, last, load_rules())
    recompute = recompute_inputs(spark, committed, last, last, 0.3, load_rules())
    sample, cut = recompute.sample, recompute.prev
    job = sample.job_sampled(F.col("job_namespace"), F.col("job_name"))
    for whole, part in ((inputs.prev.jobs, cut.jobs), (inputs.prev.columns, cut.columns)):
        assert 0 < part.count() == whole.filter(job).count() < whole.count()
    # each part is kept on local disk once cut: reading it again scans no state file
    for part in (cut.jobs, cut.columns, cut.fields, cut.datasets, cut.dataset_candidates, cut.storage_versions):
        plan = part._jdf.queryExecution().optimizedPlan().toString()
        assert "LogicalRDD" in plan and "parquet" not in plan.lower(), plan
    members = {tuple(r) for r in sample.members.collect()}
    for whole, part in ((inputs.prev.fields, cut.fields), (inputs.prev.datasets, cut.datasets)):
        names = [(r["namespace"], r["name"]) for r in part.select("namespace", "name").collect()]
        assert names and set(names) <= members and len(names) < whole.count()
    again = run_fold(spark, root, last, last, sample_rate=0.3, log=lambda _m: None, whole_check_events=0)
    assert (again.first, again.passed) == (last, True), [c.problems for c in again.checks]
    compared = again.check(DETERMINISM).details["compared_rows"]
    assert all(0 < compared[table] < again.rows(table) for table in ("state_jobs", "state_columns", "state_fields")), compared


CHAIN_DAYS = (dt.date(2024, 6, 1), dt.date(2024, 6, 2))


@dataclass
class Chain:
    """The two-day chain's warehouse: what two folds that failed raised and left behind, then the
    fold that committed (the key, component and failure tests share it: one fold, not three)."""

    root: str
    before: int  # the commit before any fold
    failures: dict[str, tuple[BaseException | None, int, list[str]]]  # what raised, the latest commit, recompute threads
    folded: FoldReport  # the fold that committed


def _recompute_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name.startswith("lineage-fold-recompute-")]


@pytest.fixture(scope="module")
def chain(spark, tmp_path_factory) -> Chain:
    """The recompute runs in a thread of its own: what it raises reaches the fold's caller, a
    failure of the fold itself cancels it, and neither commits anything or leaves it running;
    then a fold of the same range commits (nothing left in the way)."""
    from lineage_assets.pipeline import fold as pipeline_fold

    root = str(tmp_path_factory.mktemp("chain") / "wh")
    commit_events(spark, root, chain_events([str(day) for day in CHAIN_DAYS]))
    before = commits.latest(root).seq

    def broken_recompute(*_a, **_k):
        raise RuntimeError("recompute broke")

    real_stage = commits.Transaction.stage

    def broken_stage(self, df, table, *a, **k):
        if table.name == "run_lineage":
            raise OSError("disk full")
        return real_stage(self, df, table, *a, **k)

    failures = {}
    for name, target, attribute, broken in (("recompute", pipeline_fold, "recompute_sample", broken_recompute),
                                             ("stage", commits.Transaction, "stage", broken_stage)):
        raised = None
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(target, attribute, broken)
            try:
                run_fold(spark, root, *CHAIN_DAYS, log=lambda _m: None)
            except (RuntimeError, OSError) as exc:
                raised = exc
        failures[name] = (raised, commits.latest(root).seq, _recompute_threads())
    return Chain(root, before, failures, run_fold(spark, root, *CHAIN_DAYS, log=lambda _m: None))


def test_a_wrong_component_id_blocks_the_snapshot_and_readers_stay_on_the_previous_one(spark, chain, monkeypatch):
    root = chain.root
    assert chain.folded.passed
    first = publish_current_graph(spark, root, log=lambda _m: None)
    assert first.passed and first.components == 1
    with LineageQuery(root) as query:
        before = query.lineage("job:ns:B").model_dump()
    real = current_module.component_ids

    def corrupt(nodes, edges):
        ids = real(nodes, edges)
        ids[current_module.node_key("job", "ns", "B")] = "job:ns:B"  # one node's component id is wrong
        return ids

    monkeypatch.setattr(current_module, "component_ids", corrupt)
    second = publish_current_graph(spark, root, log=lambda _m: None)
    assert not second.passed and second.commit_seq is None
    assert any("job:ns:B" in p for p in second.check.problems)
    with LineageQuery(root) as query:
        assert query.lineage("job:ns:B").model_dump() == before
    assert commits.latest(root).seq == first.commit_seq


def test_the_key_check_finds_repeated_keys_and_dangling_references(spark, chain):
    """`key_problems` passes on a fold's committed tables and names each table whose key repeats
    (keys are grouped by hash first, then exactly) and each reference that points nowhere."""
    from lineage_assets.pipeline.checks import key_problems
    from lineage_assets.pipeline.fold import OUTPUTS

    root = chain.root
    tables = {name: commits.read_table(spark, root, name) for name in OUTPUTS}
    edge = tables["dataset_versions"].limit(1).select(*[  # a column edge of a written version (the chain declares none)
        F.col("version_id").alias(f.name) if f.name == "output_version_id" else F.lit(None).cast(f.dataType).alias(f.name)
        for f in registry.COLUMN_LINEAGE.schema.fields
    ])
    tables["column_lineage"] = tables["column_lineage"].unionByName(edge)
    assert key_problems(tables) == []

    doubled = {**tables, "runs": tables["runs"].unionByName(tables["runs"].limit(1)),
               "column_lineage": tables["column_lineage"].unionByName(edge)}
    assert key_problems(doubled) == ["column_lineage has a duplicated row (1 rows)", "runs has a duplicated run_id (1 rows)"]

    dangling = {**tables, "run_lineage": tables["run_lineage"].withColumn("job_version_id", F.lit("no-such-version"))}
    problems = key_problems(dangling)
    assert len(problems) == 1 and problems[0].startswith("a run names a job version that job_versions does not hold")


def test_a_failure_beside_or_in_the_recompute_commits_nothing_and_leaves_no_thread(chain):
    raised, seq, threads = chain.failures["recompute"]
    assert isinstance(raised, RuntimeError) and "recompute broke" in str(raised)
    assert seq == chain.before and threads == []
    raised, seq, threads = chain.failures["stage"]
    assert isinstance(raised, OSError) and "disk full" in str(raised)
    assert seq == chain.before and threads == []
    assert chain.folded.commit_seq == chain.before + 1  # nothing left in the way


def test_a_key_problem_blocks_the_fold_and_commits_nothing(spark, chain, monkeypatch):
    """The key check decides the commit (DESIGN.md section 11: a blocking check that fails leaves
    readers on the previous commit): `key_problems`, as run_fold calls it, reports a problem in
    the tables a refold of the chain's last day staged, while the determinism check passes; the
    fold then reports the failure and commits nothing."""
    from lineage_assets.pipeline import fold as pipeline_fold
    from lineage_assets.pipeline.fold import KEYS, OUTPUTS

    before = commits.latest(chain.root)
    seen = []

    def a_problem(staged):
        seen.append(sorted(staged))
        return ["runs has a duplicated run_id (1 rows)"]

    monkeypatch.setattr(pipeline_fold, "key_problems", a_problem)
    report = run_fold(spark, chain.root, CHAIN_DAYS[1], CHAIN_DAYS[1], log=lambda _m: None)
    assert seen == [sorted(OUTPUTS)]  # called once, on every staged output
    assert report.check(DETERMINISM).passed and not report.check(KEYS).passed
    assert report.check(KEYS).problems == ["runs has a duplicated run_id (1 rows)"]
    assert not report.passed and report.commit_seq is None
    after = commits.latest(chain.root)
    assert after.seq == before.seq and after.files("runs") == before.files("runs")
