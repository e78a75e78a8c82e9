"""`lineage_assets.settings`: settings from the environment, and how the command line reports bad ones."""

from __future__ import annotations

import pytest

from lineage_assets import settings
from lineage_assets.cli import main


def test_the_demos_start_date_is_for_the_demos_warehouse_only(tmp_path, monkeypatch):
    """`lineage-assets demo` records its first day for `make dev`; an ingest into another
    warehouse must not take it (its older events would all be quarantined as before_start_date)."""
    recorded = tmp_path / "start_date"
    recorded.write_text("2026-11-22\n")
    monkeypatch.setattr(settings, "START_DATE_FILE", recorded)
    assert settings.start_date_for(str(settings.DEFAULT_WAREHOUSE), {}) == "2026-11-22"
    assert settings.start_date_for(str(tmp_path / "wh"), {}) == settings.DEFAULT_START_DATE == "2020-01-01"
    assert settings.start_date_for(str(tmp_path / "wh"), {"LINEAGE_START_DATE": "2024-05-01"}) == "2024-05-01"
    assert settings.LineageSettings.from_env({"LINEAGE_WAREHOUSE": str(tmp_path / "wh")}).start_date == "2020-01-01"
    assert settings.LineageSettings.from_env({}).start_date == "2026-11-22"


@pytest.mark.parametrize("value", ["2024-13-01", "2024-02-30", "20240101", "yesterday"])
def test_a_start_date_is_a_real_day_written_yyyy_mm_dd(value):
    with pytest.raises(ValueError, match=f"--start-date must be a date like 2020-01-01, got '{value}'"):
        settings.parse_start_date(value, "--start-date")


def test_bad_settings_are_a_one_line_error_with_code_2_and_stop_only_what_uses_them(tmp_path, monkeypatch, capsys):
    """A bad LINEAGE_START_DATE or LINEAGE_CHECK_SAMPLE stops `ingest` and `demo` with exit 2 and
    the variable named (before: a traceback and exit 1, which the README gives to failed runs);
    the commands that only read (`summary`, `query`) do not use them and are not stopped."""
    drops = tmp_path / "drops"
    drops.mkdir()
    ingest = ["ingest", "--drop-dir", str(drops), "--warehouse", str(tmp_path / "wh")]
    for variable, value in (("LINEAGE_START_DATE", "2024-13-01"), ("LINEAGE_CHECK_SAMPLE", "0")):
        monkeypatch.setenv(variable, value)
        assert main(ingest) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {variable} must be") and "Traceback" not in err and len(err.splitlines()) == 1
        assert main(["summary", "--warehouse", str(tmp_path / "nowhere")]) == 2
        assert "does not exist" in capsys.readouterr().err
        monkeypatch.delenv(variable)
    assert main([*ingest, "--start-date", "2024-02-30"]) == 2
    assert capsys.readouterr().err == "error: --start-date must be a date like 2020-01-01, got '2024-02-30'\n"
    assert not (tmp_path / "wh").exists()  # nothing started


def test_an_ingest_into_a_file_or_from_a_file_says_so(tmp_path, capsys):
    drops = tmp_path / "drops"
    drops.mkdir()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["ingest", "--drop-dir", str(drops), "--warehouse", str(a_file)]) == 2
    assert capsys.readouterr().err == f"error: warehouse {a_file} is a file, not a folder\n"
    assert main(["ingest", "--drop-dir", str(a_file), "--warehouse", str(tmp_path / "wh")]) == 2
    assert capsys.readouterr().err == f"error: drop folder {a_file} is a file, not a folder\n"
    assert main(["serve", "--drop-dir", str(a_file), "--port", "0"]) == 2  # before: uvicorn's startup traceback, exit 3
    assert capsys.readouterr().err == f"error: drop folder {a_file} is a file, not a folder\n"
