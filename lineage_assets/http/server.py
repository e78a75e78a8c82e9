"""The OpenLineage HTTP transport endpoint: accepted events become NDJSON drop files.

`create_app` builds a Starlette app (no Dagster, no Spark); `serve` runs it with uvicorn.

Requests (what openlineage-python's `HttpTransport` sends, and the spec's batch path):

- `POST /api/v1/lineage`: one event as a JSON object (`Content-Type: application/json`), the
  client's only form (1.54: `HttpTransport` and `AsyncHttpTransport` send one event per request).
- `POST /api/v1/lineage/batch`: a JSON array of events (spec/OpenLineage.yml `/lineage/batch`,
  `postEventBatch`). Both paths take every form a drop file may have (an object, an array,
  NDJSON, with `Content-Type: application/json` or `application/x-ndjson`).
- `Content-Encoding: gzip` bodies (the client's `compression: gzip`); `Authorization: Bearer KEY`
  when the server has an API key (the client's `auth: {type: api_key, apiKey: KEY}`).

Every event of a request is checked exactly as the intake checks a drop file with the same
bytes (`decode.decode_drop`: forms, strict JSON, limits; then `validate.event_row`), and the
reason codes are the intake's. One bad event fails the whole request (400, nothing stored). Accepted events go to one writer task that groups
concurrent requests: it collects requests for up to `batch_max_wait_ms` after the first one (or
until `batch_max_events`), writes them as one NDJSON file under `<drop_dir>/http/` (a `.tmp`
name, fsync, hard link to the final name, fsync of the folder), and only then answers each of
those requests 200. A request's events are never split over two files, so a request is stored
whole or not at all. The lines are the events' canonical JSON (`event_json` of the `events`
row), so they keep their `event_id`.

`before_start_date` is not a request error: such an event is a valid OpenLineage event, so it is
landed and the intake quarantines it in `rejected_events` like any drop (a 400 would make the
producer drop it).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hmac
import logging
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from lineage_assets.http.read_api import ReadApi

from lineage_assets.intake import reasons
from lineage_assets.intake.decode import GZIP_MAGIC, Limits, decode_drop
from lineage_assets.intake.validate import Rejection, event_row

log = logging.getLogger(__name__)

LINEAGE_PATH = "/api/v1/lineage"
BATCH_PATH = "/api/v1/lineage/batch"
SUBFOLDER = "http"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5000
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024  # on the wire and after gunzip
DEFAULT_BATCH_MAX_EVENTS = 1000
DEFAULT_BATCH_MAX_WAIT_MS = 10.0
THREAD_PARSE_BYTES = 256 * 1024  # larger bodies, and every gzip body, are parsed off the event loop
MAX_LISTED_FAILURES = 100

JSON_TYPES = ("application/json",)
NDJSON_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines")

# HTTP-only error codes (the event-level ones are the intake's reason codes, `intake.reasons`)
UNAUTHORIZED = "unauthorized"
TOO_LARGE = "too_large"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
BAD_GZIP = "bad_gzip"
STORAGE_UNAVAILABLE = "storage_unavailable"

_fsync = os.fsync  # module-level so a test can make the disk fail


class _TooLarge(Exception):
    pass


class _BadRequest(Exception):
    def __init__(self, code: str, detail: str, failures: list[dict] | None = None):
        super().__init__(detail)
        self.code, self.detail, self.failures = code, detail, failures


class WriterUnavailable(Exception):
    """The events of a request could not be made durable (nothing of it is acknowledged)."""


def _problem(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if status == 413:
        headers = {"Connection": "close"}  # the rest of the body is not read
    return JSONResponse({"error": code, "detail": detail, **extra}, status_code=status, headers=headers)


# ---------------------------------------------------------------------------------------------
# The writer: one task per app, groups requests into fsynced NDJSON files


@dataclass
class _Pending:
    data: bytes  # the request's NDJSON lines, each ending in "\n"
    events: int
    future: asyncio.Future
    enqueued: float


_STOP = object()  # close(): write what came before, then end


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        _fsync(fd)
    finally:
        os.close(fd)


@dataclass
class WriterStats:
    files: int = 0
    events: int = 0
    requests: int = 0
    failed_writes: int = 0


class BatchWriter:
    """Collects accepted requests and writes each group as one durable NDJSON file."""

    def __init__(self, drop_dir: str | Path, max_events: int, max_wait_ms: float):
        if max_events < 1 or max_wait_ms < 0:
            raise ValueError("batch_max_events must be >= 1 and batch_max_wait_ms >= 0")
        self.drop_dir = Path(drop_dir)
        self.folder = self.drop_dir / SUBFOLDER
        self.max_events = max_events
        self.max_wait = max_wait_ms / 1000.0
        self.stats = WriterStats()
        self._seq = 0
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._closed = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done() and not self._closed

    async def start(self) -> None:
        await anyio.to_thread.run_sync(self._prepare_folder)
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="lineage-http-writer")

    def _prepare_folder(self) -> None:
        created = not self.folder.is_dir()
        self.folder.mkdir(parents=True, exist_ok=True)
        if created:  # the folder's own entry must survive a crash too
            fsync_dir(self.folder.parent)

    async def close(self) -> None:
        """Write everything submitted so far, then stop; later submits are refused."""
        if self._task is None or self._closed:
            return
        self._closed = True
        self._queue.put_nowait(_STOP)
        try:
            await self._task
        except Exception:  # already logged: stopping must not fail the shutdown
            log.exception("the writer task failed")

    async def submit(self, data: bytes, events: int) -> str:
        """Returns the stored file (relative to the drop folder) once it is durable."""
        if not self.running:
            raise WriterUnavailable("the writer is not running (server starting or stopping)")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put_nowait(_Pending(data, events, future, loop.time()))
        return await asyncio.shield(future)

    async def _run(self) -> None:
        try:
            await self._collect_and_write()
        finally:  # stopped or crashed: nothing may wait for an answer that never comes
            self._closed = True
            while not self._queue.empty():
                item = self._queue.get_nowait()
                if isinstance(item, _Pending) and not item.future.done():
                    item.future.set_exception(WriterUnavailable("the writer stopped"))

    async def _collect_and_write(self) -> None:
        """A file takes the requests that arrive within `max_wait` of its first one, up to
        `max_events` (a request is never split). Requests that queued up while the previous
        file was being written and fsynced join at once, so under load a file also gathers
        what arrived during the last fsync."""
        loop = asyncio.get_running_loop()
        carry = None
        while True:
            first = carry if carry is not None else await self._queue.get()
            carry = None
            if first is _STOP:
                return
            group, count, stopping = [first], first.events, False
            deadline = first.enqueued + self.max_wait
            while count < self.max_events:
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        async with asyncio.timeout(remaining):
                            item = await self._queue.get()
                    except TimeoutError:
                        break
                if item is _STOP:
                    stopping = True
                    break
                if count + item.events > self.max_events:
                    carry = item  # a request is never split: it starts the next file
                    break
                group.append(item)
                count += item.events
            await self._write_group(group, count)
            if stopping:
                return

    async def _write_group(self, group: list[_Pending], count: int) -> None:
        try:
            stored = await asyncio.to_thread(self._write_file, b"".join(p.data for p in group))
        except Exception as exc:  # noqa: BLE001 - every waiting request gets the failure, the writer goes on
            self.stats.failed_writes += 1
            log.error("could not store %d event(s) of %d request(s): %s", count, len(group), exc)
            for pending in group:
                if not pending.future.done():
                    pending.future.set_exception(WriterUnavailable(f"storing failed: {exc}"))
            return
        self.stats.files += 1
        self.stats.events += count
        self.stats.requests += len(group)
        for pending in group:
            if not pending.future.done():
                pending.future.set_result(stored)

    def _write_file(self, data: bytes) -> str:
        """Write `data` as a new file: `.tmp` name, fsync, link to the final name (never over
        an existing file), fsync of the folder. Returns the final path relative to the drop folder."""
        while True:
            self._seq += 1
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
            name = f"http-{stamp}-{os.getpid()}-{self._seq:06d}.ndjson"
            final, tmp = self.folder / name, self.folder / (name + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    _fsync(handle.fileno())
                published = _publish(tmp, final)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            if not published:
                os.unlink(tmp)
                continue  # the name was taken (a clock step back): take the next one
            try:
                fsync_dir(self.folder)
            except BaseException:  # not durable, so not acknowledged: nothing of it may stay stored
                with contextlib.suppress(OSError):
                    os.unlink(final)
                raise
            return f"{SUBFOLDER}/{name}"


def _publish(tmp: Path, final: Path) -> bool:
    """Give the written file its final name atomically; False if that name exists."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: rename (names are unique per process)
        if final.exists():
            return False
        os.rename(tmp, final)
        return True
    try:
        os.unlink(tmp)
    except BaseException:  # the request fails: the final name must not stay behind either
        with contextlib.suppress(OSError):
            os.unlink(final)
        raise
    return True


# ---------------------------------------------------------------------------------------------
# Request bodies


def gunzip_capped(data: bytes, limit: int, plain_after: bool = False) -> bytes:
    """Decompress a (multi-member) gzip body; _TooLarge past `limit` bytes, _BadRequest if corrupt.
    `plain_after`: bytes after the last member that are not gzip are plain lines, kept after the
    decompressed ones, as the intake reads a drop file with the same bytes (`decode.gunzip`); a body
    the client declared gzip (`Content-Encoding`) must be gzip throughout."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        chunk = rest
        while True:
            try:
                piece = inflater.decompress(chunk, limit + 1 - size)
            except zlib.error as exc:
                raise _BadRequest(BAD_GZIP, f"body is not valid gzip: {exc}") from None
            size += len(piece)
            out.append(piece)
            if size > limit:
                raise _TooLarge(f"body is larger than {limit} bytes once decompressed")
            if inflater.eof or not inflater.unconsumed_tail:
                break
            chunk = inflater.unconsumed_tail
        if not inflater.eof:
            raise _BadRequest(BAD_GZIP, "gzip body is truncated (no end-of-stream marker)")
        rest = inflater.unused_data.lstrip(b"\x00 \t\r\n")  # padding or a final newline, as the intake allows
        if plain_after and rest and not rest.startswith(GZIP_MAGIC):
            size += len(rest) + 1
            if size > limit:
                raise _TooLarge(f"body is larger than {limit} bytes once decompressed")
            out.extend([b"\n", rest])  # its own lines, after the decompressed ones
            break
    return b"".join(out)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _is_json_type(media: str) -> bool:
    return media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


def events_to_ndjson(body: bytes, limits: Limits) -> tuple[bytes, int]:
    """The request's events checked exactly as the intake checks a drop file with the same bytes
    (`decode_drop`: the forms, strict JSON, its limits; then `event_row`), as the NDJSON to store
    (each event's own text on one line: its line breaks, which valid JSON holds only between
    tokens, become spaces, so the stored record is as long as the client's and keeps its
    spelling; canonical JSON re-spelt `1E15` as `1000000000000000.0`, which could push a record
    the intake accepts past the record limit) and their number; or _BadRequest naming every bad
    event (the first one in `error`/`detail`). The NDJSON is decoded once more before it is
    handed over: what is stored is what the intake accepts. `limits`: the intake's record limits
    (read once, at startup: `create_app`)."""
    if not body.strip(b" \t\r\n"):
        raise _BadRequest(reasons.NOT_JSON, "body is empty")
    try:
        records = decode_drop(body, limits)
    except Exception as exc:  # noqa: BLE001 - decode_drop promises not to raise; a request must not crash anyway
        raise _BadRequest(reasons.NOT_JSON, f"body cannot be decoded: {type(exc).__name__}: {exc}"[:500]) from None
    lines: list[str] = []
    failures: list[dict] = []
    for index, record in enumerate(records):
        code, reason = record.error_code, record.error
        if record.ok:
            try:
                event_row(record.value, limits=limits, floats=record.floats)  # what the intake will check
                lines.append(record.raw.replace("\r", " ").replace("\n", " "))
            except Rejection as rejection:
                code, reason = rejection.code, rejection.reason
            except Exception as exc:  # noqa: BLE001 - no event may crash the endpoint
                code, reason = reasons.INTERNAL_ERROR, f"event cannot be stored: {type(exc).__name__}: {exc}"[:500]
        if code is not None:
            failures.append({"index": index, "line": record.source_line, "error": code, "detail": reason})
    data = b""
    if not failures:
        try:
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            again = decode_drop(data, limits)
        except Exception as exc:  # noqa: BLE001 - e.g. a string that is not text
            again, failures = [], [{"index": 0, "line": 1, "error": reasons.INTERNAL_ERROR, "detail": f"events cannot be stored: {exc}"[:500]}]
        for index, record in enumerate(again):
            if not record.ok:
                failures.append({"index": index, "line": record.source_line, "error": record.error_code,
                                 "detail": f"as stored: {record.error}"})
        if not failures and len(again) != len(records):
            failures.append({"index": 0, "line": 1, "error": reasons.INTERNAL_ERROR,
                             "detail": f"{len(records)} events became {len(again)} lines"})
    if failures:
        first = failures[0]
        detail = first["detail"] if len(records) <= 1 else (
            f"event {first['index']}: {first['detail']} "
            f"({len(failures)} of {len(records)} events rejected; nothing stored)")
        raise _BadRequest(first["error"], detail, failures[:MAX_LISTED_FAILURES])
    return data, len(records)


def _body_to_ndjson(raw: bytes, gzipped: bool, limit: int, limits: Limits, declared: bool = True) -> tuple[bytes, int]:
    """`declared`: the client said the body is gzip (Content-Encoding), not only its bytes."""
    body = gunzip_capped(raw, limit, plain_after=not declared) if gzipped else raw
    if gzipped and body.startswith(GZIP_MAGIC):  # decode_drop would inflate it again, past `limit`
        raise _BadRequest(BAD_GZIP, "body is gzip inside gzip: compress it once")
    return events_to_ndjson(body, limits)


# ---------------------------------------------------------------------------------------------
# The app


@dataclass
class _Config:
    api_key: str | None
    max_body_bytes: int
    limits: Limits  # the intake's record limits, read at startup
    counters: dict = field(default_factory=lambda: {"requests": 0, "rejected": 0})


def create_app(
    drop_dir: str | Path,
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    batch_max_events: int = DEFAULT_BATCH_MAX_EVENTS,
    batch_max_wait_ms: float = DEFAULT_BATCH_MAX_WAIT_MS,
    warehouse: str | Path | None = None,
) -> Starlette:
    """The ASGI app: `GET /` (health), `POST /api/v1/lineage`, `POST /api/v1/lineage/batch`,
    and with a `warehouse` the read routes (`http.read_api`).

    Accepted events are written under `<drop_dir>/http/`; `api_key` (None or "" = no auth)
    is required as `Authorization: Bearer <key>` on the POST routes."""
    if max_body_bytes < 1:
        raise ValueError("max_body_bytes must be >= 1")
    limits = Limits.from_env()  # a mistyped LINEAGE_MAX_* fails here, not as a 400 for every valid event
    writer = BatchWriter(drop_dir, batch_max_events, batch_max_wait_ms)
    config = _Config(api_key or None, max_body_bytes, limits)

    reader = ReadApi(str(warehouse)) if warehouse is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        await writer.start()
        try:
            yield
        finally:
            await writer.close()
            if reader is not None:
                reader.close()

    async def health(request: Request) -> JSONResponse:
        stats = writer.stats
        healthy = writer.running and writer.folder.is_dir()  # a removed drop folder fails every write: say so
        body = {
            "status": "ok" if healthy else "unavailable",
            "service": "lineage-assets OpenLineage endpoint",
            "endpoints": [LINEAGE_PATH, BATCH_PATH],
            "events_stored": stats.events,
            "files_written": stats.files,
            "requests_received": config.counters["requests"],
            "requests_stored": stats.requests,
            "requests_rejected": config.counters["rejected"],
            "failed_writes": stats.failed_writes,
        }
        return JSONResponse(body, status_code=200 if healthy else 503)

    async def receive_events(request: Request) -> JSONResponse:
        config.counters["requests"] += 1
        response = await _receive(request, writer, config)
        if response.status_code >= 400:
            config.counters["rejected"] += 1
        return response

    app = Starlette(
        routes=[
            Route("/", health, methods=["GET"]),
            Route(LINEAGE_PATH, receive_events, methods=["POST"]),
            Route(BATCH_PATH, receive_events, methods=["POST"]),
            *(reader.routes() if reader is not None else []),
        ],
        lifespan=lifespan,
    )
    app.state.writer = writer
    return app


def _authorized(request: Request, api_key: str | None) -> bool:
    if api_key is None:
        return True
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode("utf-8"), api_key.encode("utf-8"))


async def _receive(request: Request, writer: BatchWriter, config: _Config) -> JSONResponse:
    if not _authorized(request, config.api_key):
        return _problem(401, UNAUTHORIZED, "missing or wrong API key: send `Authorization: Bearer <key>`")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", "x-gzip", ""):
        return _problem(415, UNSUPPORTED_MEDIA_TYPE, f"Content-Encoding {encoding!r} is not supported (use gzip or none)")
    media = _media_type(request)
    ndjson = media in NDJSON_TYPES
    if media and not ndjson and not _is_json_type(media):
        return _problem(415, UNSUPPORTED_MEDIA_TYPE, f"Content-Type {media!r} is not supported: send application/json (an event or an array of events) or application/x-ndjson")
    limit = config.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return _problem(413, TOO_LARGE, f"body of {declared} bytes is larger than the limit of {limit} bytes")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return _problem(413, TOO_LARGE, f"body is larger than the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        return _problem(400, "client_disconnected", "the client went away before the body was complete")
    raw = b"".join(chunks)
    declared = encoding in ("gzip", "x-gzip")
    gzipped = declared or raw.startswith(GZIP_MAGIC)  # undeclared gzip: same cap
    try:
        if gzipped or size > THREAD_PARSE_BYTES:  # a small gzip body may inflate to `limit` bytes
            data, received = await anyio.to_thread.run_sync(_body_to_ndjson, raw, gzipped, limit, config.limits, declared)
        else:
            data, received = _body_to_ndjson(raw, gzipped, limit, config.limits, declared)
    except _TooLarge as exc:
        return _problem(413, TOO_LARGE, str(exc))
    except _BadRequest as exc:
        extra = {"failed_events": exc.failures} if exc.failures is not None else {}
        return _problem(400, exc.code, exc.detail, **extra)
    if received == 0:
        return JSONResponse({"status": "success", "received": 0, "stored": 0})
    try:
        stored = await writer.submit(data, received)
    except WriterUnavailable as exc:  # 503: the client's retry policy retries it
        return _problem(503, STORAGE_UNAVAILABLE, str(exc))
    return JSONResponse({"status": "success", "received": received, "stored": received, "file": stored})


# ---------------------------------------------------------------------------------------------
# Running it


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    drop_dir: str | Path = "data/drops",
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    batch_max_events: int = DEFAULT_BATCH_MAX_EVENTS,
    batch_max_wait_ms: float = DEFAULT_BATCH_MAX_WAIT_MS,
    log_level: str = "info",
    access_log: bool = False,
    warehouse: str | Path | None = None,
) -> None:
    """Run the endpoint with uvicorn until SIGINT/SIGTERM (pending groups are written first).

    Prints `listening on http://HOST:PORT` once the socket accepts connections (port 0 = any
    free port: the line names the one taken)."""
    import uvicorn

    app = create_app(drop_dir, api_key, max_body_bytes, batch_max_events, batch_max_wait_ms, warehouse=warehouse)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=access_log, lifespan="on")
    sock = config.bind_socket()
    sock.listen(config.backlog)  # connections wait in the backlog until startup is done
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    auth = "bearer API key required" if api_key else "no auth"
    print(
        f"lineage-assets serve: listening on http://{shown}:{bound} (POST {LINEAGE_PATH}, {BATCH_PATH}; {auth}); "
        f"writing to {Path(drop_dir) / SUBFOLDER}" + (f"; reading {warehouse} (GET /api/v1/lineage, ...)" if warehouse else ""),
        flush=True,
    )
    uvicorn.Server(config).run(sockets=[sock])
