"""The drop folder as the sensor sees it: which files are drops, and which changed.

Never read: names ending in `.tmp` or `.partial`, dot-files and dot-folders, and anything whose
real path lies outside the drop folder (a symlink pointing out is ignored and logged).
A file is fingerprinted (sha256) only when its size or mtime differ from what the cursor
remembers, so a tick costs a directory listing plus the hashing of what is new.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

IGNORED_SUFFIXES = (".tmp", ".partial")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class DropFile:
    relpath: str  # POSIX path relative to the drop folder
    size: int
    mtime_ns: int
    sha256: str

    @property
    def key(self) -> str:
        return drop_key(self.relpath, self.sha256)


def drop_key(relpath: str, sha256: str) -> str:
    """Partition key of a drop: its path and a content hash, so new content is a new drop."""
    return f"{relpath}@{sha256[:16]}"


def drop_id(key: str) -> str:
    """Folder-safe id of a drop key, used as the `drop_id` partition of staged tables."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def is_ignored_name(name: str) -> bool:
    return name.startswith(".") or name.endswith(IGNORED_SUFFIXES)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real + os.sep)


def scan_drop_folder(
    drop_dir: str | Path,
    known: dict[str, tuple[int, int, str]],
    log: logging.Logger | None = None,
) -> tuple[list[DropFile], dict[str, tuple[int, int, str]]]:
    """Return (files whose content is new or changed, the new `known` table).

    `known` maps relpath -> (size, mtime_ns, sha256) as remembered by the sensor's cursor.
    """
    log = log or logging.getLogger(__name__)
    root = Path(drop_dir)
    if not root.is_dir():
        log.warning("drop folder %s does not exist; nothing to read", root)
        return [], {}
    root_real = os.path.realpath(root)
    changed: list[DropFile] = []
    seen: dict[str, tuple[int, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()  # drops are registered in path order, whatever the filesystem's order
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if name.startswith("."):
                dirnames.remove(name)
            elif os.path.islink(full):
                dirnames.remove(name)
                log.warning("ignoring symlinked folder %s: drops are read from real folders only", full)
        for name in sorted(filenames):
            if is_ignored_name(name):
                continue
            full = os.path.join(dirpath, name)
            if not _inside(root_real, full):
                log.warning("ignoring %s: it points outside the drop folder %s", full, root)
                continue
            try:
                stat = os.stat(full)
            except OSError as exc:  # vanished or dangling link
                log.warning("ignoring %s: %s", full, exc)
                continue
            if not os.path.isfile(full):
                continue
            relpath = Path(full).relative_to(root).as_posix()
            previous = known.get(relpath)
            if previous and previous[0] == stat.st_size and previous[1] == stat.st_mtime_ns:
                seen[relpath] = previous
                continue
            sha = file_sha256(Path(full))
            seen[relpath] = (stat.st_size, stat.st_mtime_ns, sha)
            if previous is None or previous[2] != sha:
                changed.append(DropFile(relpath, stat.st_size, stat.st_mtime_ns, sha))
    return changed, seen
