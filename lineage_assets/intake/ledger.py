"""The drop ledger: what the intake has consumed of each file in the drop folder.

One row per file path: the file's identity when it was last read (device, inode, size, mtime),
how far it has been consumed (`offset`, the byte after its last complete line, and `lines`, the
lines before that offset) and two fingerprints of the consumed prefix. The ledger is committed
with the events it stands for (section 11: progress after success), so a batch that fails or is
killed leaves it where it was and the same bytes are read again.

How a change is told apart from growth, at a cost that does not depend on the file's size:
- unchanged: same (device, inode, size, mtime_ns) as the ledger row: nothing is read;
- touched: only the mtime moved (same device, inode and size, and the two fingerprints below are
  what they were): nothing new to read; the next landing batch commits the row with the new mtime
  (`touched`), so that later scans take it as unchanged instead of fingerprinting it again;
- grown: same device and inode, size >= offset, and the sha256 of the first and of the last
  WINDOW bytes of the consumed prefix are what they were: read from `offset` on;
- replaced (a new file): anything else: another inode (a file renamed over it), a file that
  shrank below its offset, or a changed first/last window. It is read from its first byte as a
  new file (`file_id`), and the events it repeats are duplicates of the ones already landed.
  A change inside the consumed prefix that keeps both windows, the size and the inode (an
  in-place rewrite of the middle of a file) is not detected: producers append, they do not edit.

Forms: plain NDJSON is consumed line by line (`ndjson`); a gzip file, a JSON array or a
pretty-printed document is consumed whole (`whole`) and any change to it makes it a new file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from lineage_assets.intake.decode import GZIP_MAGIC, Limits, has_surrogate

WINDOW = 1 << 16  # bytes fingerprinted at each end of a consumed prefix
# An unterminated last line of a file untouched this long is read as the file's last record (a
# producer that died mid-line, or lines ended by a lone CR): waiting for its line break forever
# would leave it without an outcome.
ABANDONED_TAIL_SECONDS = 3600
NDJSON, WHOLE = "ndjson", "whole"
IGNORED_SUFFIXES = (".tmp", ".partial")
NEW, GROWN, REPLACED = "new", "grown", "replaced"
_TOUCHED = "touched"  # `_grown_or_replaced`: its stat moved, nothing new (not a FileChange kind)


@dataclass(frozen=True)
class FileState:
    """A ledger row: a file as the intake last consumed it."""

    path: str  # POSIX path relative to the drop folder
    file_id: str  # this file's identity: a replaced file gets a new one
    device: int
    inode: int
    size: int
    mtime_ns: int
    offset: int  # bytes consumed: the end of the last complete line (the whole file for WHOLE)
    lines: int  # line breaks before `offset` (the next line read is lines + 1)
    head_sha: str  # sha256 of bytes [0, min(offset, WINDOW))
    tail_sha: str  # sha256 of bytes [max(0, offset - WINDOW), offset)
    form: str  # NDJSON or WHOLE
    batch_id: str  # the batch that last consumed it

    @property
    def pending(self) -> int:
        """Bytes seen but not consumed: an incomplete last line waiting for its end."""
        return self.size - self.offset

    def as_row(self) -> dict:
        return asdict(self)

    @classmethod
    def from_row(cls, row: Mapping) -> "FileState":
        return cls(**{f.name: row[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class FileChange:
    """A file with something new to read, as a cheap scan sees it (nothing of it read yet)."""

    path: str
    kind: str  # NEW, GROWN or REPLACED
    device: int
    inode: int
    size: int
    mtime_ns: int
    previous: FileState | None  # the ledger row (GROWN: where reading resumes)
    flush: bool = False  # read an unterminated last line too (`abandoned_before_ns`)


class Ledger(Mapping):
    """The committed ledger as read from its Parquet file: path -> FileState, built on demand,
    so that comparing 100,000 files with the folder costs a few column reads, not 100,000 objects."""

    def __init__(self, table: pa.Table | None = None):
        self.table = table
        self._paths: list[str] = table.column("path").to_pylist() if table is not None else []
        self._index = {path: i for i, path in enumerate(self._paths)}

    def identities(self) -> dict[str, tuple[int, int, int, int]]:
        """path -> (device, inode, size, mtime_ns)."""
        if self.table is None:
            return {}
        columns = [self.table.column(c).to_pylist() for c in ("device", "inode", "size", "mtime_ns")]
        return dict(zip(self._paths, zip(*columns)))

    def consumed(self) -> dict[str, bool]:
        """path -> whether every byte seen of it was consumed (no pending incomplete line)."""
        if self.table is None:
            return {}
        return dict(zip(self._paths, (o == s for o, s in zip(self.table.column("offset").to_pylist(), self.table.column("size").to_pylist()))))

    def __getitem__(self, path: str) -> FileState:
        index = self._index[path]  # KeyError for a path the ledger does not hold
        return FileState.from_row(self.table.slice(index, 1).to_pylist()[0])

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def with_states(self, states: Iterable[FileState], schema: pa.Schema) -> pa.Table:
        """The ledger table with `states` replacing (or adding) the rows of their paths."""
        new = pa.Table.from_pylist([s.as_row() for s in states], schema=schema)
        if self.table is None or not len(self.table):
            return new.sort_by("path")
        keep = pc.invert(pc.is_in(self.table.column("path"), value_set=new.column("path")))
        return pa.concat_tables([self.table.select(schema.names).cast(schema).filter(keep), new]).sort_by("path")


def is_ignored_name(name: str) -> bool:
    return name.startswith(".") or name.endswith(IGNORED_SUFFIXES)


def window_sha(handle, start: int, end: int) -> str:
    handle.seek(start)
    return hashlib.sha256(handle.read(end - start)).hexdigest()


def prefix_fingerprints(handle, offset: int) -> tuple[str, str]:
    """(head_sha, tail_sha) of the first `offset` bytes of an open file."""
    return window_sha(handle, 0, min(offset, WINDOW)), window_sha(handle, max(0, offset - WINDOW), offset)


def sniff_form(head: bytes, more: Callable[[int], bytes] | None = None) -> str:
    """WHOLE for gzip, a JSON array or a pretty-printed document; NDJSON otherwise. `head`: the
    file's first WINDOW bytes (or all of it); `more(n)`: its first n bytes, read only when `head`
    cannot tell (a first line that opens an object but is not a JSON value, in a file longer than
    `head`): a file of at most the record limit that is one JSON value is then a document (read
    line by line, a pretty-printed event longer than WINDOW became a reject per line)."""
    if head.startswith(GZIP_MAGIC):
        return WHOLE
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return WHOLE
    first, newline, _ = text.partition(b"\n")
    # a lone "{" is a pretty-printed document only once its line has ended: before that it may be
    # the first byte of an NDJSON line being appended (undecided: NDJSON, nothing consumed yet)
    if not newline or not first.startswith(b"{"):
        return NDJSON
    if first.strip() == b"{":
        return WHOLE
    # a first line that opens an object and is not a JSON value by itself: a document printed with
    # its first key on the "{" line when what was read (or, past `head`, the file up to the record
    # limit) is one JSON value; otherwise an NDJSON file whose first line is broken
    if is_json_value(first):
        return NDJSON
    if is_json_value(text):
        return WHOLE
    if more is not None and len(head) >= WINDOW:
        limit = Limits.from_env().record_bytes
        whole = more(limit + len(head) - len(text) + 1)
        body = whole.lstrip(b"\xef\xbb\xbf \t\r\n")
        if len(body) <= limit and is_json_value(body):
            return WHOLE
    return NDJSON


def is_json_value(data: bytes) -> bool:
    """Whether `data` is one JSON value (a value nested too deep for Python's parser is not)."""
    try:
        json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False
    return True


def list_drop_folder(
    drop_dir: str | Path, log: logging.Logger | None = None, unstated: frozenset | set = frozenset()
) -> dict[str, os.stat_result | None]:
    """Every readable drop file: relpath -> stat. Ignored: dot-files and dot-folders, `.tmp` and
    `.partial` names, symlinked folders, any file whose real path (a link's target included)
    lies outside the drop folder or has an ignored name, and (with a warning at every listing)
    any whose path is not valid UTF-8. One `stat` per file, except for the
    regular files named in `unstated` (listed with None)."""
    log = log or logging.getLogger(__name__)
    root = os.fspath(drop_dir)
    if not os.path.isdir(root):
        log.warning("drop folder %s does not exist; nothing to read", root)
        return {}
    root = root.rstrip(os.sep) or os.sep
    root_real = os.path.realpath(root)
    cut = len(root) + 1
    found: dict[str, os.stat_result] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            log.warning("cannot list %s: %s", folder, exc)
            continue
        for entry in entries:
            if is_ignored_name(entry.name):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
                continue
            if entry.is_symlink():
                if entry.is_dir():
                    log.warning("ignoring symlinked folder %s: drops are read from real folders only", entry.path)
                    continue
                real = os.path.realpath(entry.path)
                if not (real == root_real or real.startswith(root_real + os.sep)):
                    log.warning("ignoring %s: it points outside the drop folder %s", entry.path, root)
                    continue
                if any(is_ignored_name(part) for part in Path(os.path.relpath(real, root_real)).parts):
                    continue  # a link to a file that is itself not a drop (a .tmp being written, a dot-file)
            relpath = entry.path[cut:]
            if os.sep != "/":
                relpath = relpath.replace(os.sep, "/")
            if has_surrogate(relpath):  # its bytes kept as surrogates: no table (Arrow, Parquet) can hold the name
                shown = os.fsencode(entry.path).decode("utf-8", "backslashreplace")
                log.warning("ignoring %s: its name is not valid UTF-8; rename it to have it read", shown)
                continue
            if relpath in unstated and entry.is_file(follow_symlinks=False):
                found[relpath] = None
                continue
            try:
                info = entry.stat()  # follows a link (checked above to stay inside)
            except OSError as exc:  # vanished, or a dangling link
                log.warning("ignoring %s: %s", entry.path, exc)
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            found[relpath] = info
    return found


def abandoned_before_ns(now: float) -> int:
    """The mtime before which a pending last line is abandoned (`ABANDONED_TAIL_SECONDS`)."""
    return int((now - ABANDONED_TAIL_SECONDS) * 1e9)


def changed_files(
    drop_dir: str | Path, ledger: Mapping[str, FileState], log: logging.Logger | None = None,
    quiet_after_ns: int | None = None, abandoned_before_ns: int | None = None,
    refreshed: list[FileState] | None = None,
) -> list[FileChange]:
    """Files with something new since the ledger, in path order. Costs a listing, a stat per file
    and, per file whose stat changed, two WINDOW reads: never a read of the whole file.

    With `quiet_after_ns` (a quick look, as the sensor takes between full sweeps), files the
    ledger consumed entirely whose mtime is older than that are not even stat'ed: a file landed
    whole (renamed into place) does not change, so a tick over 100,000 landed files costs the
    listing. An append to such a quiet file is found by the next full look (or landing batch).

    With `abandoned_before_ns`, an unchanged file whose unterminated last line (pending since
    the last read) has not been touched since then is a change too, whose last line is to be read
    as it is (`FileChange.flush`).

    With `refreshed`, the ledger rows of the files whose stat moved with nothing new (an mtime
    touched: same inode and size, same fingerprints of the consumed prefix) are appended to it
    with their new stat (`touched`): committed, they spare every later look those fingerprints."""
    out: list[FileChange] = []
    identities = ledger.identities() if isinstance(ledger, Ledger) else {
        path: (s.device, s.inode, s.size, s.mtime_ns) for path, s in ledger.items()
    }
    unstated: set = set()
    if quiet_after_ns is not None:
        consumed = ledger.consumed() if isinstance(ledger, Ledger) else {p: s.offset == s.size for p, s in ledger.items()}
        unstated = {p for p, ident in identities.items() if ident[3] < quiet_after_ns and consumed.get(p)}
    for path, info in sorted(list_drop_folder(drop_dir, log, unstated).items()):
        if info is None:
            continue
        before = ledger.get(path)
        if identities.get(path) == (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns):
            kind = None
        else:
            kind = NEW if before is None else _grown_or_replaced(os.path.join(drop_dir, path), before, info)
        if kind is None or kind == _TOUCHED:  # nothing new (or only its mtime): its pending last line, if any, may be abandoned
            if abandoned_before_ns is not None and before.offset < info.st_size and info.st_mtime_ns < abandoned_before_ns:
                out.append(FileChange(path, GROWN, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, before, flush=True))
            elif kind == _TOUCHED and refreshed is not None:
                refreshed.append(touched(before, info))
            continue
        out.append(FileChange(path, kind, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, before))
    return out


def _grown_or_replaced(full: str, before: FileState, info: os.stat_result) -> str | None:
    if (info.st_dev, info.st_ino) != (before.device, before.inode) or info.st_size < before.offset:
        return REPLACED
    if before.form == WHOLE:
        return REPLACED  # any change to a whole-read file makes it a new file
    try:
        with open(full, "rb") as handle:
            same = prefix_fingerprints(handle, before.offset) == (before.head_sha, before.tail_sha)
    except OSError:
        return None  # vanished since the listing: the next scan sees what is there
    if not same:
        return REPLACED
    if info.st_size == before.size:
        return _TOUCHED  # touched (mtime) but nothing new: the pending tail is still what it was
    return GROWN


def file_id(path: str, batch_id: str) -> str:
    """The identity of a file as first read by `batch_id` (a replaced file is read by a later one)."""
    return hashlib.sha256(f"{path}\0{batch_id}".encode("utf-8")).hexdigest()[:20]


def updated(states: Mapping[str, FileState], new: Iterable[FileState]) -> dict[str, FileState]:
    out = dict(states)
    for state in new:
        out[state.path] = state
    return out


def touched(state: FileState, info: os.stat_result) -> FileState:
    """The ledger row of a file whose mtime moved with nothing new to read."""
    return replace(state, size=info.st_size, mtime_ns=info.st_mtime_ns)
