"""Run leases: a run holds a kernel lock on `_runs/<run id>.lease` in the warehouse while it
works, so anyone can tell a run whose process died (the kernel freed its lock) from a live one.

The default Dagster run launcher cannot check a run worker's health, so a run process killed
with SIGKILL would otherwise stay STARTED forever; the sensor uses `lease_state` to fail it.
"""

from __future__ import annotations

import fcntl
import os

HELD, FREE, MISSING = "held", "free", "missing"
_open: dict[str, object] = {}


def _path(root: str, run_id: str) -> str:
    return os.path.join(root, "_runs", f"{run_id}.lease")


def take(root: str, run_id: str) -> None:
    """Hold the lease of `run_id` until `release` or the end of this process."""
    if run_id in _open:
        return
    path = _path(root, run_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle = open(path, "a+")
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    _open[run_id] = handle


def release(root: str, run_id: str) -> None:
    handle = _open.pop(run_id, None)
    if handle is None:
        return
    try:
        os.unlink(_path(root, run_id))
    except FileNotFoundError:
        pass
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


def lease_state(root: str, run_id: str) -> str:
    """HELD (a live process holds it), FREE (its holder died) or MISSING (never taken, or released)."""
    if run_id in _open:
        return HELD
    try:
        handle = open(_path(root, run_id), "r")
    except FileNotFoundError:
        return MISSING
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return HELD
        fcntl.flock(handle, fcntl.LOCK_UN)
        return FREE


def forget(root: str, run_id: str) -> None:
    """Remove the lease file of a run found dead."""
    try:
        os.unlink(_path(root, run_id))
    except FileNotFoundError:
        pass
