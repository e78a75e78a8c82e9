"""What assets show about Spark's task tries (defs.metadata.failed_tasks_since)."""

from __future__ import annotations

from lineage_assets.defs import metadata


def test_failed_task_attempts_are_shown_and_warned(monkeypatch):
    """The count is the attempts that failed since the step began, not the session's total, and
    only a non-zero count is warned about."""
    counts = iter([5, 7])
    monkeypatch.setattr(metadata, "failed_task_attempts", lambda _spark: next(counts))
    warned: list[str] = []
    before = metadata.failed_task_attempts(None)
    assert metadata.failed_tasks_since(None, before, warned.append) == {metadata.FAILED_TASKS: 2}
    assert len(warned) == 1 and warned[0].startswith("2 Spark task attempt(s) failed")

    monkeypatch.setattr(metadata, "failed_task_attempts", lambda _spark: 7)
    assert metadata.failed_tasks_since(None, 7, warned.append) == {metadata.FAILED_TASKS: 0}
    assert len(warned) == 1


def test_a_step_without_a_spark_session_ran_no_task():
    from lineage_assets.defs.resources import failed_task_attempts

    assert failed_task_attempts(None) == 0
