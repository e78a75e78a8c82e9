"""What the picture tests share: the programs they need (a missing one fails the test loudly,
never skips it), reading the nodes an SVG draws, decoding a PNG, and headless Chromium."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass

import pytest

from lineage_assets.query.models import Edge, LineageGraph, Node

SVG = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"


def require(program: str, package: str) -> str:
    """The program's path; the test fails (not skips) when it is not installed."""
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"`{program}` is not installed: apt-get install {package} (.ci/run installs it before `make test`)")
    return path


# ----------------------------------------------------------------------------- answers with awkward names

JOB_NS = "scheduler://airflow.example.com:8080"
DS_NS = "postgres://db.example.com:5432"
AWKWARD = [  # (kind, namespace, name)
    ("job", JOB_NS, 'etl "daily" (v2), a\\Nb & <c> \\G \\\\ end'),
    ("dataset", DS_NS, "sales.orders(2024), 'q' – ünïcödé 数据 &amp; &#92;N"),
    ("dataset", "s3://bucket:9000", "lake/raw/" + "very_long_segment_" * 6 + "tail"),
    ("job", JOB_NS, "two  spaces]}|{<>"),
    ("dataset", DS_NS, "out#put:with:colons"),
]


def _id(kind: str, ns: str, name: str) -> str:
    return f"{kind}:{ns}:{name}"


def job_graph() -> LineageGraph:
    """Two jobs and three datasets with awkward names: the first job reads two datasets and
    writes the last one, the second job reads one of the two and writes the last one too."""
    ids = [_id(*a) for a in AWKWARD]
    links = [(ids[1], ids[0]), (ids[2], ids[0]), (ids[0], ids[4]), (ids[2], ids[3]), (ids[3], ids[4])]
    nodes = []
    for (kind, ns, name), node_id in zip(AWKWARD, ids):
        nodes.append(Node(
            id=node_id, type=kind.upper(), data={"namespace": ns, "name": name},
            inEdges=[Edge(origin=a, destination=b) for a, b in links if b == node_id],
            outEdges=[Edge(origin=a, destination=b) for a, b in links if a == node_id],
        ))
    return LineageGraph(graph=nodes)


FIELDS = [  # (namespace, dataset, field, type)
    (DS_NS, "sales.orders(2024)", 'amount "net"', "decimal(10,2)"),
    (DS_NS, "sales.orders(2024)", "a\\Nb", None),
    (DS_NS, "report <&> 数据", "total", "double"),
    ("s3://bucket:9000", "lake/raw/x", "items[0].price", "struct<a:int>"),
]


def column_graph() -> LineageGraph:
    """Four fields of three datasets with awkward names; one INDIRECT edge."""
    ids = [f"datasetField:{ns}:{d}:{f}" for ns, d, f, _t in FIELDS]
    links = [(ids[0], ids[2]), (ids[1], ids[2]), (ids[3], ids[0])]
    nodes = []
    for (ns, dataset, field, kind), node_id in zip(FIELDS, ids):
        inputs = [
            {"namespace": FIELDS[ids.index(a)][0], "dataset": FIELDS[ids.index(a)][1], "field": FIELDS[ids.index(a)][2],
             "transformations": [{"type": "INDIRECT" if a == ids[1] else "DIRECT", "subtype": "FILTER" if a == ids[1] else "IDENTITY"}]}
            for a, b in links if b == node_id
        ]
        nodes.append(Node(
            id=node_id, type="DATASET_FIELD",
            data={"namespace": ns, "dataset": dataset, "field": field, "fieldType": kind, "datasetVersion": "v1", "inputFields": inputs},
            inEdges=[Edge(origin=a, destination=b) for a, b in links if b == node_id],
            outEdges=[Edge(origin=a, destination=b) for a, b in links if a == node_id],
        ))
    return LineageGraph(graph=nodes)


# ----------------------------------------------------------------------------- SVG


@dataclass
class Drawn:
    """A node or cluster of an SVG drawn by Graphviz: its tooltip and its label's lines."""

    tooltip: str | None
    lines: list[str]

    @property
    def text(self) -> str:
        return "".join(self.lines)


def _drawn(group: ET.Element) -> Drawn:
    """(Graphviz writes a space after a space as a no-break space.)"""
    tooltips = [a.get(XLINK_TITLE).replace("\xa0", " ") for a in group.iter(f"{SVG}a") if a.get(XLINK_TITLE) is not None]
    lines = [(t.text or "").replace("\xa0", " ") for t in group.iter(f"{SVG}text")]
    return Drawn(tooltips[0] if tooltips else None, lines)


def svg_parts(svg: bytes | str) -> tuple[list[Drawn], list[Drawn]]:
    """(nodes, clusters) of an SVG; parsing it also checks it is well-formed XML."""
    root = ET.fromstring(svg.encode("utf-8") if isinstance(svg, str) else svg)
    nodes = [_drawn(g) for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    clusters = [_drawn(g) for g in root.iter(f"{SVG}g") if g.get("class") == "cluster"]
    return nodes, clusters


def label_of(node: Node) -> tuple[str, str]:
    """What the picture must say of a node, worked out from the answer alone: (main text, small
    text): a job's or dataset's name and namespace, a field's name and type."""
    data = node.data
    if node.type == "DATASET_FIELD":
        return str(data["field"]), str(data.get("fieldType") or "")
    return str(data["name"]), str(data["namespace"])


def assert_names_every_node(svg: bytes | str, graph: LineageGraph) -> None:
    """Every node of the answer is drawn once, with its full id as its tooltip and its name (and
    namespace or type) as its label; every field's dataset is a cluster naming it."""
    nodes, clusters = svg_parts(svg)
    by_tooltip: dict[str, list[Drawn]] = {}
    for drawn in nodes:
        by_tooltip.setdefault(drawn.tooltip, []).append(drawn)
    assert sorted(by_tooltip) == sorted(graph.ids), "the picture's nodes are not the answer's"
    for node in graph.graph:
        main, small = label_of(node)
        assert any(d.text == main + small for d in by_tooltip[node.id]), (node.id, [d.lines for d in by_tooltip[node.id]])
        if node.type == "DATASET_FIELD":
            dataset, namespace = str(node.data["dataset"]), str(node.data["namespace"])
            assert any(c.text.startswith(dataset + namespace) for c in clusters), (dataset, [c.lines for c in clusters])


# ----------------------------------------------------------------------------- PNG


@dataclass
class Png:
    width: int
    height: int
    rgb: set[tuple[int, int, int]]  # the distinct colours of its pixels

    @property
    def colours(self) -> int:
        return len(self.rgb)


def decode_png(data: bytes) -> Png:
    """Width, height and the distinct colours of an 8-bit PNG (grey, RGB, palette, with or
    without alpha; alpha ignored); raises on anything that is not a valid PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    palette = b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind!r}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    assert header is not None and idat, "no IHDR or IDAT"
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and interlace == 0, f"only 8-bit, non-interlaced PNGs are decoded here (depth {depth}, interlace {interlace})"
    bpp = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    assert len(raw) == height * (stride + 1), "wrong amount of image data"
    previous = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + previous[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = previous[i], (previous[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        else:
            assert kind == 0, f"unknown filter {kind}"
        colours.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp))
        previous = line
    if colour == 3:
        assert palette, "palette PNG without a palette"
        rgb = {tuple(palette[3 * p[0]:3 * p[0] + 3]) for p in colours}
    elif colour in (0, 4):
        rgb = {(p[0], p[0], p[0]) for p in colours}
    else:
        rgb = {tuple(p[:3]) for p in colours}
    return Png(width, height, rgb)


# ----------------------------------------------------------------------------- Chromium

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",  # a container's /dev/shm is small
]


def chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Headless Chromium (Debian's `chromium`) with a fresh profile; `args` end with the URL."""
    program = require("chromium", "chromium")
    with tempfile.TemporaryDirectory(prefix="chromium_profile_") as profile:
        return subprocess.run([program, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, timeout=timeout, check=False)


def dump_dom(url: str) -> str:
    result = chromium("--dump-dom", url)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    return result.stdout.decode("utf-8")


def screenshot(url: str, path: str, size: str = "1200,900") -> bytes:
    result = chromium(f"--screenshot={path}", f"--window-size={size}", url)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    with open(path, "rb") as handle:
        return handle.read()
