"""Content-derived identifiers (DESIGN.md section 4).

Every id in the warehouse is derived from content so that re-running anything reproduces it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

LINEAGE_NS = uuid.uuid5(uuid.NAMESPACE_URL, "lineage_assets")


def canonical_json(obj: Any) -> str:
    """The one JSON spelling used for hashing: sorted keys, no spaces, unicode kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_uuid(content: Any) -> str:
    """uuid5(LINEAGE_NS, canonical_json(content)) as a string."""
    return str(uuid.uuid5(LINEAGE_NS, canonical_json(content)))


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def event_id(event: Any) -> str:
    """sha256 of the canonical event JSON: byte-different but canonically equal events share it."""
    return sha256_hex(canonical_json(event))
