"""Response models of the recipe questions (DESIGN.md section 9). `.model_dump()` is their JSON."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, RootModel

from lineage_assets.query.field_models import Directive, EndPoint, _Model


class DirectiveRun(_Model):
    runId: str
    job: EndPoint
    endedAt: str
    state: str | None = None
    recipe: bool  # whether the run's job carried a recipe
    directives: list[Directive] = []
    notes: list[str] = []  # what only the data could settle about this column


class ColumnDirectives(_Model):
    """`column_directives()`: the runs in the window that wrote the dataset, and the directives
    that touched the column in each (its earlier names followed back through renames)."""

    dataset: EndPoint
    field: str
    runs: list[DirectiveRun]


class ColumnStep(_Model):
    """One hop between two columns: the job and run that made it, how, the recipe directives on
    the way (none when the job had no recipe), and the column at the other end."""

    job: EndPoint
    runId: str | None = None
    type: str | None = None
    subtype: str | None = None
    description: str | None = None
    masking: bool | None = None
    directives: list[Directive] = []
    node: ColumnNode


class ColumnNode(_Model):
    id: str
    namespace: str
    name: str
    field: str  # "*" for every field of the dataset (a dataset-wide dependency)
    steps: list[ColumnStep] = []
    repeated: bool = False  # met again: expanded where it first appears (or a cycle)
    truncated: bool = False  # the depth limit stopped here


class ColumnTrace(_Model):
    """`column_history()` (backward: what made the column what it is) or `column_impact()`
    (forward: the columns it impacted), through recipe directives, jobs and datasets."""

    direction: Literal["backward", "forward"]
    depth: int
    root: ColumnNode


ColumnStep.model_rebuild()


class TagHop(_Model):
    from_: str = Field(alias="from")
    to: str
    job: EndPoint
    subtype: str | None = None


class TaggedField(_Model):
    """A field carrying a tag: directly (its dataset's newest tags facet names it) or, with
    propagation, derived from a tagged field through DIRECT edges with no masking on the way."""

    id: str
    namespace: str
    name: str
    field: str
    key: str
    value: str | None = None
    source: str | None = None
    direct: bool
    taggedField: str  # the field the tag was set on
    path: list[TagHop] = []


class TaggedFields(RootModel[list[TaggedField]]):
    """`tagged_fields()`."""


class DatasetTag(_Model):
    field: str | None = None  # None: the whole dataset
    key: str
    value: str | None = None
    source: str | None = None


class DatasetTags(_Model):
    """`dataset_tags()`: the tags of a dataset's newest tags facet, and when that version was made."""

    namespace: str
    name: str
    asOf: str | None = None
    tags: list[DatasetTag] = []
