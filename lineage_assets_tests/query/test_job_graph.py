"""The job graph's prepared answers (`JobGraph.answer`, made of objects built at load) are the
answers built row by row (`lineage_query._graph`), on a platform-shaped snapshot with hub
datasets (no Spark), for jobs and datasets at several depths; and the parts answers share are
read-only, so a caller changing one answer changes no other."""

from __future__ import annotations

import copy
import pickle
import random

import pytest
from pydantic import ValidationError

from lineage_assets import LineageQuery
from lineage_assets.query import synthetic_platform as platform
from lineage_assets.query.lineage_query import _graph
from lineage_assets.query.node_ids import NodeRef

NS = platform.NS


@pytest.fixture(scope="module")
def query(tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("job_graph") / "wh")
    platform.build_platform(warehouse, jobs=600, seed=11, hub_share=0.05)
    with LineageQuery(warehouse) as q:
        q.lineage(f"job:{NS}:hub.writer0", depth=0)  # loads
        yield q


def _row_by_row(query: LineageQuery, ref: NodeRef, depth: int):
    job_rows, edge_rows = query._jobs.around(ref.kind, ref.namespace, ref.name, depth)
    return _graph(ref, job_rows, edge_rows, query.aliases_of, include_temporary=True)


def test_prepared_answers_are_the_row_by_row_answers(query):
    rng = random.Random(5)
    specs = platform.platform_jobs(600, seed=11, hub_share=0.05)
    sizes = []
    for spec in rng.sample(specs, 25):
        for kind, name in (("job", spec.name), ("dataset", spec.output)):
            for depth in (0, 1, 3, 20):
                ref = NodeRef(kind, NS, name)
                answer = query.lineage(f"{kind}:{NS}:{name}", depth=depth)
                assert answer.model_dump() == _row_by_row(query, ref, depth).model_dump(), (kind, name, depth)
                sizes.append(len(answer.graph))
    assert max(sizes) > 200 and min(sizes) <= 3  # hub-sized answers and single jobs were both compared


def test_shared_parts_of_answers_are_read_only_and_copies_are_the_callers(query):
    first = query.lineage(f"job:{NS}:hub.writer1", depth=2)
    second = query.lineage(f"job:{NS}:hub.writer1", depth=2)
    assert first == second
    job = next(n for n in first.graph if n.type == "JOB")
    dataset = next(n for n in first.graph if n.type == "DATASET")
    for change in (lambda: job.data.__setitem__("namespace", "changed"), lambda: job.inEdges.append(job.outEdges[0]),
                   lambda: dataset.outEdges.clear(), lambda: dataset.data.update(name="x"), lambda: job.data["temporaryDatasets"].append("x")):
        with pytest.raises(TypeError, match="read-only"):
            change()
    with pytest.raises(ValidationError):
        job.id = "changed"
    with pytest.raises(ValidationError):
        job.outEdges[0].origin = "changed"
    mine = job.data.copy()  # a copy is the caller's own
    mine["namespace"] = "changed"
    first.graph.pop()  # so is the answer's list of nodes
    third = query.lineage(f"job:{NS}:hub.writer1", depth=2)
    assert third == second and third.model_dump() == second.model_dump() and len(first.graph) == len(third.graph) - 1
    assert copy.deepcopy(third) == third and pickle.loads(pickle.dumps(third)) == third
