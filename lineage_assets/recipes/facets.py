"""A recipe's lineage as the OpenLineage `columnLineage` dataset facet (plain dicts).

Only certain edges are written: DIRECT edges per output field (IDENTITY or TRANSFORMATION, with
`masking`), and the filters' columns once, as dataset-wide INDIRECT/FILTER dependencies (the
facet's `dataset` list, OpenLineage 1-2-0). An edge only the data could settle is left out; the
lineage's `unresolved` says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lineage_assets.recipes.column_lineage import DIRECT, INDIRECT, RecipeLineage


def _description(lineage: RecipeLineage, steps: Sequence[int]) -> str:
    names = {s.number: s.name for s in lineage.recipe.steps}
    return "recipe steps " + ", ".join(f"{n} {names[n]}" for n in steps)


def column_lineage_facet(lineage: RecipeLineage, owners: Mapping[str, Sequence[tuple[str, str]]]
                         ) -> dict[str, Any]:
    """{"fields": {output: {"inputFields": [...]}}, "dataset": [...]}.

    owners: each input column -> the (namespace, name) of the datasets it is read from."""
    fields: dict[str, dict[str, Any]] = {}
    dataset: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in lineage.edges:
        if not edge.certain:
            continue
        transformation = {"type": edge.type, "subtype": edge.subtype,
                          "description": _description(lineage, edge.steps),
                          "masking": edge.masking}
        for namespace, name in owners.get(edge.input, ()):
            item = {"namespace": namespace, "name": name, "field": edge.input,
                    "transformations": [transformation]}
            if edge.type == INDIRECT:
                dataset.setdefault((namespace, name, edge.input), item)
            elif edge.type == DIRECT:
                fields.setdefault(edge.output, {"inputFields": [], "transformationDescription": None,
                                                "transformationType": None})["inputFields"].append(item)
    return {"fields": fields, "dataset": [dataset[key] for key in sorted(dataset)]}
