"""DataHub's `upstreamLineage` aspect as pydantic models (DESIGN.md section 8): what
`fine_grained_lineage(namespace, name)` exports is validated against them.

The models mirror datahub-project/datahub metadata-models/src/main/pegasus/com/linkedin/dataset/
UpstreamLineage.pdl, Upstream.pdl, FineGrainedLineage.pdl, DatasetLineageType.pdl,
FineGrainedLineageUpstreamType.pdl and FineGrainedLineageDownstreamType.pdl (with the optional
Upstream fields `created` and `properties` of the generated
metadata-ingestion/src/datahub/metadata/schemas/UpstreamLineage.avsc, and AuditStamp from it).
Field names are DataHub's (camelCase), so `model_dump(exclude_none=True)` is the aspect's JSON.
Beyond the PDL, URNs are checked: dataset URNs where a dataset is meant, schemaField URNs where a
field is, each parsed by `lineage_assets.identity.datahub.parse_urn`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lineage_assets.identity.datahub import DatasetUrn, FieldUrn, parse_urn

# DatasetLineageType.pdl
DatasetLineageType = Literal["COPY", "TRANSFORMED", "VIEW"]
# FineGrainedLineageUpstreamType.pdl
FineGrainedLineageUpstreamType = Literal["FIELD_SET", "DATASET", "NONE"]
# FineGrainedLineageDownstreamType.pdl (a DATASET downstream is only "may be added in future")
FineGrainedLineageDownstreamType = Literal["FIELD", "FIELD_SET"]


def _urn_of(urn: str, kind: type[DatasetUrn] | type[FieldUrn], what: str) -> str:
    """`urn` if it parses as `kind`; ValueError otherwise."""
    parsed = parse_urn(urn)
    if not isinstance(parsed, kind):
        expected = "a dataset URN" if kind is DatasetUrn else "a schemaField URN"
        raise ValueError(f"{what} must be {expected}, got {urn!r}")
    return urn


class AuditStamp(BaseModel):
    """Who did it (`actor`, a URN) and when (`time`, milliseconds since the epoch)."""

    model_config = ConfigDict(extra="forbid")

    time: int
    actor: str
    impersonator: str | None = None
    message: str | None = None

    @field_validator("actor", "impersonator")
    @classmethod
    def _is_urn(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("urn:li:"):
            raise ValueError(f"{value!r} is not a URN (urn:li:...)")
        return value


class Upstream(BaseModel):
    """One upstream dataset of the aspect's dataset (Upstream.pdl); `auditStamp` defaults to
    time 0 by `urn:li:corpuser:unknown` as in the PDL."""

    model_config = ConfigDict(extra="forbid")

    auditStamp: AuditStamp = Field(default_factory=lambda: AuditStamp(time=0, actor="urn:li:corpuser:unknown"))
    created: AuditStamp | None = None
    dataset: str
    type: DatasetLineageType
    properties: dict[str, str] | None = None

    @field_validator("dataset")
    @classmethod
    def _dataset_urn(cls, value: str) -> str:
        return _urn_of(value, DatasetUrn, "Upstream.dataset")


class FineGrainedLineage(BaseModel):
    """Upstream fields (or datasets) to downstream field(s) (FineGrainedLineage.pdl):
    `transformOperation` is free text (the export writes `TYPE:SUBTYPE`), `confidenceScore` is
    between 0 and 1, `query` the URN of the query that made the lineage."""

    model_config = ConfigDict(extra="forbid")

    upstreamType: FineGrainedLineageUpstreamType
    upstreams: list[str] | None = None
    downstreamType: FineGrainedLineageDownstreamType
    downstreams: list[str] | None = None
    transformOperation: str | None = None
    confidenceScore: float = Field(default=1.0, ge=0.0, le=1.0)
    query: str | None = None

    @field_validator("query")
    @classmethod
    def _query_urn(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("urn:li:"):
            raise ValueError(f"query {value!r} is not a URN (urn:li:...)")
        return value

    @model_validator(mode="after")
    def _urn_shapes(self) -> FineGrainedLineage:
        """Upstreams are dataset URNs for DATASET, schemaField URNs for FIELD_SET and absent for
        NONE ("the downstream field is not a derived field"); downstreams are schemaField URNs,
        exactly one for FIELD ("a single, specific, downstream field")."""
        upstreams = self.upstreams or []
        if self.upstreamType == "NONE" and upstreams:
            raise ValueError("upstreamType NONE takes no upstreams")
        kind = DatasetUrn if self.upstreamType == "DATASET" else FieldUrn
        for urn in upstreams:
            _urn_of(urn, kind, f"an upstream of upstreamType {self.upstreamType}")
        downstreams = self.downstreams or []
        for urn in downstreams:
            _urn_of(urn, FieldUrn, "a downstream")
        if self.downstreamType == "FIELD" and self.downstreams is not None and len(downstreams) != 1:
            raise ValueError(f"downstreamType FIELD takes exactly one downstream, got {len(downstreams)}")
        return self


class UpstreamLineage(BaseModel):
    """The `upstreamLineage` aspect of a dataset (UpstreamLineage.pdl)."""

    model_config = ConfigDict(extra="forbid")

    upstreams: list[Upstream]
    fineGrainedLineages: list[FineGrainedLineage] | None = None
