"""Response models of the field-lineage queries over time (DESIGN.md section 8) and of the
dataset resource. `.model_dump()` is the JSON shape the design gives."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


class EndPoint(_Model):
    namespace: str
    name: str


class FieldInfo(_Model):
    name: str
    lineage: bool


class FieldList(RootModel[list[FieldInfo]]):
    """`fields()`: a dataset's fields that took part in lineage in the window (and, on request,
    those of its current schema that did not)."""


class Transformation(_Model):
    model_config = ConfigDict(extra="forbid", frozen=True)  # hashable: one operation per distinct transformation

    type: str | None = None
    subtype: str | None = None
    description: str | None = None
    masking: bool | None = None


class FieldMap(_Model):
    from_: str = Field(alias="from")
    to: str | None  # None: a dataset-wide dependency
    transformations: list[Transformation] = Field(default_factory=list)


class RunRef(_Model):
    runId: str
    job: EndPoint
    endedAt: str


class Mapping(_Model):
    direction: Literal["backward", "forward"]
    source: EndPoint
    destination: EndPoint
    level: int
    fieldmap: list[FieldMap]
    runs: list[RunRef]


class FieldMappings(RootModel[list[Mapping]]):
    """`field_mappings()`: every (source, destination) dataset pair once, at its lowest level
    (with `direction="both"` too: `direction` says which way reached it there)."""


class OperationNode(_Model):
    id: str
    label: str
    sourceEndPoint: EndPoint | None = None
    destinationEndPoint: EndPoint | None = None


class Directive(_Model):
    """One recipe step as it touched a column: the column's name at that step and its label."""

    step: int
    line: int | None = None
    directive: str
    name: str | None = None  # the directive's name
    label: str  # Read | Drop | Add | Rename | Modify
    column: str
    reads: list[str] = []
    newName: str | None = None


class Operation(_Model):
    name: str
    description: str | None
    type: str | None = None
    subtype: str | None = None
    masking: bool | None = None
    directives: list[Directive] = []  # for a recipe run: the directives between the two fields


class Connection(_Model):
    from_: str = Field(alias="from")
    to: str
    operation: str


class ProgramRun(_Model):
    runId: str
    endedAt: str


class Program(_Model):
    job: EndPoint
    runs: list[ProgramRun]
    lastExecutedAt: str


class FieldOperations(_Model):
    nodes: list[OperationNode]
    operations: list[Operation]
    connections: list[Connection]
    programs: list[Program]


class SchemaField(_Model):
    name: str
    type: str | None = None
    tags: list[str] = Field(default_factory=list)
    description: str | None = None


class InputFieldRef(_Model):
    namespace: str
    dataset: str
    field: str
    transformationDescription: str | None = None
    transformationType: str | None = None


class ColumnLineageEntry(_Model):
    name: str
    inputFields: list[InputFieldRef]


class DatasetResource(_Model):
    """The reference server's Dataset, plus its column lineage (the column-lineage endpoint design)."""

    id: EndPoint
    type: str
    name: str
    physicalName: str
    namespace: str
    createdAt: str | None
    updatedAt: str | None
    fields: list[SchemaField]
    currentVersion: str | None
    lastModifiedAt: str | None
    lastLifecycleState: str | None
    facets: dict[str, Any]
    columnLineage: list[ColumnLineageEntry]
    aliases: list[EndPoint] = Field(default_factory=list)
