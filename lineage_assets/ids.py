"""Content-derived identifiers (DESIGN.md section 4).

Every id in the warehouse is derived from content so that re-running anything reproduces it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import orjson

LINEAGE_NS = uuid.uuid5(uuid.NAMESPACE_URL, "lineage_assets")


def canonical_json(obj: Any, floats: bool = True) -> str:
    """The one JSON spelling used for hashing: sorted keys, no spaces, unicode kept
    (`json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, DESIGN.md 4).

    `floats=False` is the caller's promise that `obj` holds no float (the intake's decoder knows
    this of every record it parses): orjson then writes the same text about five times faster.
    Its strings, integers up to 64 bits, booleans, null and key order are spelt as json.dumps
    spells them (tested over every code point); it formats some floats differently (`1e-5`
    against `1e-05`), hence the promise. What orjson refuses (a larger integer, a lone
    surrogate, nesting beyond 255 levels) is written by json.dumps, which also raises
    where it should."""
    if not floats:
        try:
            return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except (TypeError, orjson.JSONEncodeError):  # JSONEncodeError is a TypeError; both named for the reader
            pass
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
