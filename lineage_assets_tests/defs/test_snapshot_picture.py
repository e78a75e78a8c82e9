"""The snapshot asset (`current_graph`) attaches a picture of the current graph to its
`current_lineage` materialization, as the Dagster UI shows it: markdown with the PNG embedded,
what was left out, and the files written beside the tables. Dagster runs the real asset; only
the Spark publish is replaced (by a synthetic platform warehouse, already committed), so this
needs no Spark. Graphviz's `dot` must be installed (a missing one fails the test)."""

from __future__ import annotations

import base64

import dagster as dg
import pytest
from dagster_pyspark import LazyPySparkResource

from lineage_assets.defs import lineage as lineage_defs
from lineage_assets.defs.metadata import snapshot_pictures_on
from lineage_assets.defs.partitions import daily_partitions
from lineage_assets.defs.resources import LineagePaths, LineageQueryResource
from lineage_assets.pipeline.checks import CheckReport
from lineage_assets.pipeline.snapshot import COMPONENTS, SnapshotReport
from lineage_assets.query import synthetic_platform as platform
from lineage_assets.settings import LineageSettings
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets_tests.pictures import decode_png, require


class NoSpark(LazyPySparkResource):
    """The resource with no session: the replaced publish does not use one."""

    @property
    def spark_session(self):
        return None


def test_the_current_lineage_materialization_shows_the_graph(tmp_path, monkeypatch):
    require("dot", "graphviz")
    monkeypatch.setenv("LINEAGE_SNAPSHOT_PICTURE", "1")
    warehouse = str(tmp_path / "wh")
    platform.build_platform(warehouse, jobs=120, days=0, seed=3)
    seq = commits.latest(warehouse).seq
    report = SnapshotReport("2026-01-01", {table.name: 1 for table in t.SNAPSHOTS}, 9, CheckReport(COMPONENTS, True), seq)
    monkeypatch.setattr(lineage_defs, "publish_current_graph", lambda spark, root, log: report)
    settings = LineageSettings(str(tmp_path / "drops"), warehouse, "2026-01-01")
    _fold, current_graph, _check = lineage_defs.build_lineage_assets(daily_partitions(settings.start_date))
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [current_graph], instance=instance, selection=[table.name for table in t.SNAPSHOTS],
            resources={"pyspark": NoSpark(spark_config={}), "paths": LineagePaths.from_settings(settings),
                       "lineage_query": LineageQueryResource.from_settings(settings)},
        )
        assert result.success
        event = instance.get_latest_materialization_event(dg.AssetKey("current_lineage"))
        metadata = event.asset_materialization.metadata
        others = instance.get_latest_materialization_event(dg.AssetKey("current_jobs")).asset_materialization.metadata
    assert isinstance(metadata["graph_picture"], dg.MarkdownMetadataValue)
    text = metadata["graph_picture"].value
    summary = metadata["graph_picture_summary"].value
    assert text.startswith(summary) and "150 of 240 nodes drawn" in summary and "left out: " in summary
    png = base64.b64decode(text.split("(data:image/png;base64,", 1)[1].rstrip(")"))
    assert decode_png(png).colours > 20
    assert isinstance(metadata["graph_picture_svg"], dg.PathMetadataValue)
    assert open(metadata["graph_picture_png"].value, "rb").read() == png
    assert metadata["commit"].value == seq and "graph_picture" not in others


@pytest.mark.parametrize("value, on", [("1", True), ("", True), ("0", False), ("off", False), ("False", False), ("no", False)])
def test_the_picture_setting(value, on):
    assert snapshot_pictures_on({"LINEAGE_SNAPSHOT_PICTURE": value}) is on
    assert snapshot_pictures_on({}) is True
