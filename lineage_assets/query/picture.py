"""Pictures of lineage answers (DESIGN.md section 12, "Pictures").

An answer (`LineageGraph`) becomes Graphviz DOT source (`draw`), rendered to SVG or PNG by
Graphviz's `dot` program (Debian package `graphviz`, run through the `graphviz` Python package;
`GraphvizMissing` when it is not installed), or a standalone HTML page with the SVG inline and a
list of the answer's nodes (`html_page`).

- Jobs are rounded boxes, datasets cylinders (dashed when temporary), both labelled with their
  name over their namespace; the node asked about has a thick orange border. A job-to-job edge
  that bridges hidden temporary datasets is dashed.
- A column answer groups fields by dataset: one cluster per dataset (per dataset version in a
  point-in-time answer) labelled with the dataset's name and namespace, a box per field with its
  type. An edge whose transformations are all INDIRECT is dashed; its tooltip lists them.
- Labels are split into lines but never shortened, so a picture names every node it draws; the
  full node id is each node's tooltip. Values are escaped for DOT (Graphviz expands `\\N` and
  entities even inside HTML-like labels and tooltips) and Graphviz escapes them again for SVG;
  the HTML around the SVG is escaped with `html.escape`.
- A picture is bounded: at most `max_nodes` nodes are drawn, those nearest the node asked about
  (breadth first over the answer's edges, ties by id), and it says how many were left out.
- Output is deterministic: nodes, clusters and edges are written in id order.

`snapshot_picture(query)` draws the largest components of the current graph: what the
snapshot asset attaches to its materialization.
"""

from __future__ import annotations

import html
import re
import subprocess
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lineage_assets.query.models import LineageGraph, Node

FORMATS = ("svg", "png", "html")
DEFAULT_MAX_NODES = 300  # what `dot` lays out in a second or two
MAX_NODES = 2000  # more would keep `dot` busy for minutes
SNAPSHOT_MAX_NODES = 150
SNAPSHOT_PNG_MAX_BYTES = 600_000  # the PNG embedded in a materialization's metadata
SNAPSHOT_DPI = (72, 60, 54)  # the embedded PNG's resolution: the first whose PNG is small enough
SNAPSHOT_WIDTH = 900 / 72  # inches: the Dagster UI shows the PNG at its size, in a dialog about 900 pixels wide
PACK_MARGIN = 24  # points between packed components
LIST_LIMIT = 5000  # rows of an HTML page's node list
WRAP = 40  # characters per label line
FONT = "DejaVu Sans"
MISSING_DOT = (
    "Graphviz's `dot` program was not found on PATH; pictures need Graphviz: "
    "apt-get install graphviz (Debian/Ubuntu)"
)

_JOB = {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbe4ff", "color": "#364fc7"}
_DATASET = {"shape": "cylinder", "style": "filled", "fillcolor": "#d3f9d8", "color": "#2b8a3e", "margin": "0.14,0.11"}
_FIELD = {"shape": "box", "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#868e96"}
_START = {"penwidth": "3", "color": "#e8590c", "fillcolor": "#ffe8cc"}
_CLUSTER = {"style": "rounded,filled", "fillcolor": "#f1f3f5", "color": "#adb5bd"}


class GraphvizFailed(RuntimeError):
    """Graphviz's `dot` ran and failed on the graph it was given."""


class GraphvizMissing(RuntimeError):
    """Graphviz's `dot` program is not installed."""

    def __init__(self) -> None:
        super().__init__(MISSING_DOT)


def check_max_nodes(max_nodes: object) -> int:
    if not isinstance(max_nodes, int) or isinstance(max_nodes, bool) or not 1 <= max_nodes <= MAX_NODES:
        raise ValueError(f"max_nodes must be an integer from 1 to {MAX_NODES}, got {max_nodes!r}")
    return max_nodes


def format_of(path: str) -> str:
    """The output format a file name asks for (its extension), or ValueError."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the picture format of {path!r}: the file name must end in .svg, .png or .html")
    return suffix


# ----------------------------------------------------------------------------- escaping


def _unshowable(c: str) -> bool:
    """A character XML 1.0 does not allow (Graphviz's labels are XML, SVG is): control characters,
    a lone surrogate, and the noncharacters U+FFFE and U+FFFF (a name may hold any of them)."""
    code = ord(c)
    return code < 32 or code == 127 or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF)


def _visible(value: object) -> str:
    """Text with the characters SVG and HTML cannot hold (`_unshowable`) shown as escapes."""
    text = str(value)
    if any(_unshowable(c) for c in text):
        text = "".join(c if not _unshowable(c) else (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}") for c in text)
    return text


def _label_text(value: object) -> str:
    """Text inside an HTML-like DOT label: entities escaped, and backslashes doubled (Graphviz
    expands `\\N`, `\\G`, ... in labels, HTML-like ones too)."""
    return html.escape(_visible(value), quote=True).replace("\\", "\\\\")


def _quoted(value: object) -> str:
    """A DOT double-quoted string for an escString attribute whose text is shown verbatim (a
    tooltip): Graphviz unescapes its backslashes twice and reads entities in it."""
    text = html.escape(_visible(value), quote=False).replace("\\", "\\\\\\\\").replace('"', '\\"')
    return f'"{text}"'


def _attrs(values: dict[str, str]) -> str:
    """DOT attributes; a value starting with `<` is an HTML-like label, others are quoted."""
    parts = []
    for key, value in values.items():
        parts.append(f"{key}={value}" if value.startswith("<") else f'{key}="{value}"')
    return " ".join(parts)


def wrap(text: str, width: int = WRAP) -> list[str]:
    """`text` in lines of at most `width` characters, broken after a separator where one is near
    the end of a line; no character is added or removed (the lines joined are the text)."""
    lines = []
    while len(text) > width:
        cut = max(text.rfind(sep, width // 2, width) for sep in "./_-:, ")
        cut = cut + 1 if cut > 0 else width
        lines.append(text[:cut])
        text = text[cut:]
    return [*lines, text] if text or not lines else lines


def _html_lines(main: str, small: str | list[str] | None = None, bold: bool = True, width: int = WRAP, size: int = 9) -> str:
    """An HTML-like label: `main` (wrapped, bold) over `small` (each wrapped, `size` points, grey)."""
    rows = [(f"<B>{_label_text(line)}</B>" if bold else _label_text(line)) for line in wrap(_visible(main), width)]
    for text in [small] if isinstance(small, str) else small or []:
        rows += [f'<FONT POINT-SIZE="{size}" COLOR="#495057">{_label_text(line)}</FONT>' for line in wrap(_visible(text), width)]
    return "<" + "<BR/>".join(rows) + ">"


# ----------------------------------------------------------------------------- what a node shows


def node_name(node: Node) -> str:
    """What a node is called in a picture: a job's or dataset's name, a field's name."""
    data = node.data
    if node.type == "DATASET_FIELD":
        return str(data.get("field", node.id))
    return str(data.get("name", node.id))


def node_label_lines(node: Node) -> list[str]:
    """The texts of a node's label, before wrapping: name and namespace, or field and type."""
    data = node.data
    if node.type == "DATASET_FIELD":
        return [node_name(node)] + ([str(data["fieldType"])] if data.get("fieldType") else [])
    return [node_name(node), str(data.get("namespace", ""))]


def _dataset_of(node: Node) -> tuple[str, str, str | None]:
    """The cluster a field node is drawn in: (namespace, dataset, version in a point-in-time answer)."""
    data = node.data
    version = data.get("datasetVersion")
    versioned = version is not None and node.id.endswith(f"#{version}")
    return str(data.get("namespace", "")), str(data.get("dataset", "")), (str(version) if versioned else None)


def is_column_graph(graph: LineageGraph) -> bool:
    return any(n.type == "DATASET_FIELD" for n in graph.graph)


# ----------------------------------------------------------------------------- drawing


@dataclass
class Drawing:
    """DOT source and what it shows of an answer."""

    dot: str
    drawn: list[Node]
    left_out: list[Node]
    columns: bool
    starts: set[str] = field(default_factory=set)


def nearest(graph: LineageGraph, starts: Iterable[str], limit: int) -> tuple[list[Node], list[Node]]:
    """The answer's nodes split into the `limit` nearest the start nodes (breadth first over the
    answer's edges in both directions, each step in id order; nodes no edge reaches follow in id
    order) and the rest."""
    nodes = sorted(graph.graph, key=lambda n: (n.id, n.type))
    if len(nodes) <= limit:
        return nodes, []
    by_id: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        by_id.setdefault(node.id, []).append(index)
    starts = set(starts)
    seeds = sorted({i for s in starts for i in by_id.get(s, ())} | {
        i for i, n in enumerate(nodes)
        if n.type == "DATASET_FIELD" and f"dataset:{n.data.get('namespace')}:{n.data.get('dataset')}" in starts
    })
    order: list[int] = []
    seen = set(seeds)
    queue = deque(seeds or [0])
    seen.update(queue)
    while queue and len(order) < limit:
        index = queue.popleft()
        order.append(index)
        node = nodes[index]
        near = sorted({e.origin for e in node.inEdges} | {e.destination for e in node.outEdges})
        for other in near:
            for j in by_id.get(other, ()):
                if j not in seen:
                    seen.add(j)
                    queue.append(j)
    if len(order) < limit:
        chosen = set(order)
        order += [i for i in range(len(nodes)) if i not in chosen][: limit - len(order)]
    chosen = set(order)
    return sorted((nodes[i] for i in chosen), key=lambda n: (n.id, n.type)), [n for i, n in enumerate(nodes) if i not in chosen]


def _transformations(origin: Node, destination: Node) -> list[str]:
    """`TYPE:SUBTYPE` of the transformations from `origin` to field `destination`."""
    o = origin.data
    found = set()
    for entry in destination.data.get("inputFields") or []:
        if (entry.get("namespace"), entry.get("dataset"), entry.get("field")) == (o.get("namespace"), o.get("dataset"), o.get("field")):
            for t in entry.get("transformations") or []:
                found.add(":".join(p for p in (t.get("type"), t.get("subtype")) if p))
    return sorted(found)


def draw(
    graph: LineageGraph,
    starts: Iterable[str] = (),
    *,
    title: str | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    link: Callable[[Node], str | None] | None = None,
    components: dict[str, int] | None = None,
    per_row: int = 2,
    rankdir: str = "LR",
    implied_namespaces: frozenset[str] = frozenset(),
) -> Drawing:
    """DOT source for an answer. `starts`: ids of the nodes to highlight (a dataset id also
    highlights its cluster in a column answer). `link(node)`: a URL for each node (SVG links).
    `components`: node id -> the rank of its connected component; the components are laid out
    `per_row` to a row in that order (Graphviz's `pack`; the snapshot's picture). `rankdir`: LR
    (inputs left of outputs) or TB (inputs above outputs). `implied_namespaces`: namespaces not
    repeated on the labels of jobs and datasets (the title names them)."""
    if rankdir not in ("LR", "TB"):
        raise ValueError(f"rankdir must be LR or TB, got {rankdir!r}")
    check_max_nodes(max_nodes)
    starts = set(starts)
    columns = is_column_graph(graph)
    drawn, left_out = nearest(graph, starts, max_nodes)
    if components:  # Graphviz packs the components in the order their first nodes come
        drawn.sort(key=lambda n: (components.get(n.id, len(components)), n.id, n.type))
    names: dict[int, str] = {}
    ids: dict[str, list[str]] = {}
    for index, node in enumerate(drawn):
        names[id(node)] = f"n{index}"
        ids.setdefault(node.id, []).append(f"n{index}")

    note = f"{len(drawn)} of {len(drawn) + len(left_out)} nodes drawn ({len(left_out)} farther ones left out)" if left_out else None
    heading = [*(title.split("\n") if title else []), *([note] if note else [])]  # a title's first line, the rest smaller
    caption = f" label={_html_lines(heading[0], heading[1:], bold=False, width=120, size=11)}" if heading else ""
    lines = [
        "digraph lineage {",
        f'  graph [rankdir="{rankdir}" fontname="{FONT}" fontsize="12" nodesep="0.25" ranksep="0.6" bgcolor="white" '
        f'labelloc="t" labeljust="l"{caption}'
        + (f' pack="{PACK_MARGIN}" packmode="array_i{per_row}"' if components else ' newrank="true"') + "]",  # dot 2.43 crashes on both
        f'  node [fontname="{FONT}" fontsize="11" margin="0.12,0.06"]',
        f'  edge [fontname="{FONT}" color="#495057" arrowsize="0.7"]',
    ]

    def node_line(node: Node, indent: str) -> str:
        style = {"JOB": _JOB, "DATASET": _DATASET}.get(node.type, _FIELD)
        attrs = dict(style)
        if node.type == "DATASET" and node.data.get("temporary"):
            attrs["style"] = "filled,dashed"
        if node.id in starts:
            attrs.update(_START)
        main, *rest = node_label_lines(node)
        if node.type != "DATASET_FIELD" and rest and rest[0] in implied_namespaces:
            rest = []
        attrs["label"] = _html_lines(main, rest[0] if rest else None)
        url = link(node) if link else None
        text = _attrs(attrs) + f" tooltip={_quoted(node.id)}"
        if url:
            text += f' URL="{html.escape(url, quote=True)}" target="_top"'
        return f"{indent}{names[id(node)]} [{text}]"

    def nodes_block(nodes: list[Node], indent: str) -> list[str]:
        if not columns:
            return [node_line(n, indent) for n in nodes]
        clusters: dict[tuple, list[Node]] = {}
        for n in nodes:
            clusters.setdefault(_dataset_of(n), []).append(n)
        out = []
        for k, (key, members) in enumerate(sorted(clusters.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or ""))):
            ns, name, version = key
            attrs = dict(_CLUSTER)
            if f"dataset:{ns}:{name}" in starts:
                attrs.update(_START)
            attrs["label"] = _html_lines(name, ns + (f"  #{version}" if version else ""))
            out.append(f"{indent}subgraph cluster_{k} {{")
            out.append(f"{indent}  graph [{_attrs(attrs)} tooltip={_quoted(f'dataset:{ns}:{name}' + (f'#{version}' if version else ''))}]")
            out += [node_line(n, indent + "  ") for n in members]
            out.append(f"{indent}}}")
        return out

    lines += nodes_block(drawn, "  ")

    by_id = {n.id: n for n in drawn}
    edges = sorted({(e.origin, e.destination) for n in drawn for e in (*n.inEdges, *n.outEdges)
                    if e.origin in ids and e.destination in ids})
    for origin, destination in edges:
        attrs: dict[str, str] = {}
        tooltip = f"{origin} -> {destination}"
        if columns:
            kinds = _transformations(by_id[origin], by_id[destination])
            if kinds:
                tooltip += ": " + ", ".join(kinds)
            if kinds and all(k.startswith("INDIRECT") for k in kinds):
                attrs.update(style="dashed", color="#868e96")
        elif by_id[origin].type == "JOB" and by_id[destination].type == "JOB":
            attrs.update(style="dashed", color="#868e96")
            through = [b.get("through") for b in by_id[origin].data.get("bridged") or [] if b.get("to") == destination]
            if through:
                tooltip += ", through temporary datasets " + ", ".join(str(t) for t in through)
        text = (_attrs(attrs) + " " if attrs else "") + f"tooltip={_quoted(tooltip)}"
        for a in ids[origin]:
            for b in ids[destination]:
                lines.append(f"  {a} -> {b} [{text}]")
    lines.append("}")
    return Drawing("\n".join(lines) + "\n", drawn, left_out, columns, starts)


def render(dot: str, fmt: str, compact: bool = False) -> bytes:
    """DOT source as SVG or PNG bytes, laid out by Graphviz's `dot`. A `compact` PNG has a
    colour palette (drawn by cairo, written by gd): a third of the bytes."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"render() makes svg or png, not {fmt!r}")
    return _dot(dot, fmt, **({"renderer": "cairo", "formatter": "gd"} if compact and fmt == "png" else {}))


def _dot(dot: str, fmt: str, **how) -> bytes:
    import graphviz

    try:
        return graphviz.pipe("dot", fmt, dot.encode("utf-8"), quiet=True, **how)
    except graphviz.ExecutableNotFound as exc:
        raise GraphvizMissing() from exc
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode("utf-8", "replace").strip()
        raise GraphvizFailed(f"Graphviz's dot failed (exit {exc.returncode}): {detail[:500]}") from exc


def svg_element(svg: bytes | str) -> str:
    """Graphviz's SVG document as an element to put inline in HTML (no XML prolog or doctype),
    sized to fit the page's width but never below 75% of its natural size (then it scrolls)."""
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    start = text.find("<svg")
    text = text[start:] if start >= 0 else text
    size = re.match(r'<svg width="([0-9.]+)pt" height="[0-9.]+pt"', text)
    if size:
        width = float(size.group(1))
        text = f'<svg style="width: max(min(100%, {width:.0f}pt), {0.75 * width:.0f}pt); height: auto"' + text[size.end():]
    return text


# ----------------------------------------------------------------------------- questions


def ask(query, node_id: str, *, columns: bool = False, depth: int = 20, with_downstream: bool = False) -> LineageGraph:
    """The answer a picture draws: `column_lineage` with `columns`, else `lineage`."""
    if columns:
        return query.column_lineage(node_id, depth=depth, with_downstream=with_downstream)
    if with_downstream:
        raise ValueError("with_downstream applies to the column graph: the job graph already shows both directions")
    return query.lineage(node_id, depth=depth)


def start_ids(query, node_id: str, graph: LineageGraph) -> set[str]:
    """The ids in `graph` of the node a picture was asked about: the id itself, or the
    canonical node an alias, a partition or a DataHub URN names (a dataset id also marks its
    cluster in a column answer)."""
    from lineage_assets.query.node_ids import NodeNotFound, candidates, split_version
    from lineage_assets.query.urns import is_urn

    ids = graph.ids
    found = {node_id} & ids
    try:
        readings = [query.resolve_urn(node_id)] if is_urn(node_id) else candidates(node_id)
    except (ValueError, NodeNotFound):
        return found
    version = split_version(node_id)[1]
    datasets = {(n.data.get("namespace"), n.data.get("dataset")) for n in graph.graph if n.type == "DATASET_FIELD"}
    for ref in readings:
        for reading in {ref, query.canonical(ref)}:
            found |= {reading.id, f"{reading.id}#{version}"} & ids
            if reading.kind == "dataset" and (reading.namespace, reading.name) in datasets:
                found.add(reading.id)  # a column answer of a dataset: its cluster
        if ref.kind == "job" and datasets:  # a column answer of a job: the clusters of what it writes
            found |= {f"dataset:{ns}:{name}" for ns, name in _outputs(query, ref) if (ns, name) in datasets}
    return found


def _outputs(query, job) -> list[tuple[str, str]]:
    """(namespace, name) of the datasets a job's current version writes (none when it has no
    current version)."""
    from lineage_assets.query.node_ids import NodeNotFound

    try:
        answer = query.lineage(node_type="job", namespace=job.namespace, name=job.name, depth=0)
    except (ValueError, NodeNotFound):
        return []
    jobs = [n for n in answer.graph if n.type == "JOB" and (n.data.get("namespace"), n.data.get("name")) == (job.namespace, job.name)]
    written = {e.destination for n in jobs for e in n.outEdges}
    return [(n.data["namespace"], n.data["name"]) for n in answer.graph if n.type == "DATASET" and n.id in written]


def describe(node_id: str, *, columns: bool, depth: int, with_downstream: bool) -> str:
    """A picture's title: what was asked."""
    what = "column lineage" if columns else "lineage"
    how = f"depth {depth}" + (", upstream and downstream" if columns and with_downstream else ", upstream" if columns else "")
    return f"{what} of {node_id} ({how})"


def picture(query, node_id: str, fmt: str, *, columns: bool = False, depth: int = 20, with_downstream: bool = False,
            max_nodes: int = DEFAULT_MAX_NODES) -> bytes:
    """The picture of an answer as the bytes of an svg, png or html file (what `lineage-assets
    graph` writes)."""
    if fmt not in FORMATS:
        raise ValueError(f"picture format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    check_max_nodes(max_nodes)
    graph = ask(query, node_id, columns=columns, depth=depth, with_downstream=with_downstream)
    title = describe(node_id, columns=columns, depth=depth, with_downstream=with_downstream)
    starts = start_ids(query, node_id, graph)
    if fmt == "html":  # the page's heading is the title
        drawing = draw(graph, starts, max_nodes=max_nodes)
        return html_page(graph, drawing, render(drawing.dot, "svg"), title=title).encode("utf-8")
    return render(draw(graph, starts, title=title, max_nodes=max_nodes).dot, fmt)


def view_page(query, node_id: str, *, columns: bool = False, depth: int = 20, with_downstream: bool = False,
              max_nodes: int = DEFAULT_MAX_NODES, path: str = "/lineage/view", api: str = "/api/v1") -> str:
    """The read API's HTML page for a node (`GET /lineage/view`): the picture with each node
    linked to its own page, links to change the question, and the answer's JSON route."""
    from urllib.parse import urlencode

    from lineage_assets.query.traversal import MAX_DEPTH

    check_max_nodes(max_nodes)

    def url(node: str, cols: bool = columns, d: int = depth, down: bool = with_downstream) -> str:
        params = {"nodeId": node, "depth": d}
        if cols:
            params["columns"] = "true"
            if down:
                params["withDownstream"] = "true"
        if max_nodes != DEFAULT_MAX_NODES:
            params["maxNodes"] = max_nodes
        return f"{path}?{urlencode(params)}"

    def link(node: Node) -> str:
        return url(node.id, cols=columns or node.type == "DATASET_FIELD")

    graph = ask(query, node_id, columns=columns, depth=depth, with_downstream=with_downstream)
    title = describe(node_id, columns=columns, depth=depth, with_downstream=with_downstream)
    drawing = draw(graph, start_ids(query, node_id, graph), max_nodes=max_nodes, link=link)  # the heading is the title
    nav = [(f"depth {depth + 1}", url(node_id, d=depth + 1))] if depth < MAX_DEPTH else []  # no link to a refused depth
    if depth > 0:
        nav.insert(0, (f"depth {depth - 1}", url(node_id, d=depth - 1)))
    if columns:
        nav.append(("upstream only" if with_downstream else "with downstream", url(node_id, down=not with_downstream)))
        if not node_id.startswith("datasetField:"):
            nav.append(("job graph", url(node_id, cols=False)))
        json_url = f"{api}/column-lineage?" + urlencode({"nodeId": node_id, "depth": depth, "withDownstream": str(with_downstream).lower()})
    else:
        nav.append(("column graph", url(node_id, cols=True)))
        json_url = f"{api}/lineage?" + urlencode({"nodeId": node_id, "depth": depth})
    nav.append(("JSON", json_url))
    return html_page(graph, drawing, render(drawing.dot, "svg"), title=title, nav=nav, link=link)


# ----------------------------------------------------------------------------- HTML

_CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 1.5em; color: #212529; background: #fff; }
h1 { font-size: 1.3em; margin: 0 0 .3em; overflow-wrap: anywhere; }
nav a { margin-right: 1em; }
figure { margin: 1em 0; overflow: auto; border: 1px solid #dee2e6; padding: .5em; }
table { border-collapse: collapse; font-size: .9em; }
th, td { border-bottom: 1px solid #dee2e6; padding: .25em .6em; text-align: left; vertical-align: top; }
td.id { font-family: "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
.note { color: #495057; }
.error { color: #c92a2a; }
"""


def html_page(
    graph: LineageGraph,
    drawing: Drawing,
    svg: bytes | str,
    *,
    title: str,
    nav: list[tuple[str, str]] | None = None,
    link: Callable[[Node], str | None] | None = None,
) -> str:
    """A standalone page: the title, `nav` links (text, url), the SVG inline and every node of
    the answer (type, name, namespace, id; linked with `link`)."""
    esc = html.escape
    total = len(graph.graph)
    note = f"{total} node{'s' if total != 1 else ''} in the answer"
    if drawing.left_out:
        note += f"; the picture draws the {len(drawing.drawn)} nearest the node asked about, {len(drawing.left_out)} are left out"
    drawn = {id(n) for n in drawing.drawn}
    rows = []
    for node in sorted(graph.graph, key=lambda n: (n.id, n.type))[:LIST_LIMIT]:
        data = node.data
        if node.type == "DATASET_FIELD":
            name = f"{data.get('dataset', '')} . {data.get('field', '')}"
        else:
            name = str(data.get("name", ""))
        url = link(node) if link else None
        shown = esc(_visible(node.id))
        cell = f'<a href="{esc(url, quote=True)}">{shown}</a>' if url else shown
        marks = []
        if node.id in drawing.starts:
            marks.append("asked about")
        if id(node) not in drawn:
            marks.append("not drawn")
        rows.append(
            f"<tr><td>{esc(node.type)}</td><td>{esc(_visible(name))}</td><td>{esc(_visible(data.get('namespace', '')))}</td>"
            f"<td class=\"id\">{cell}</td><td>{esc(', '.join(marks))}</td></tr>"
        )
    if total > LIST_LIMIT:
        rows.append(f'<tr><td colspan="5" class="note">... and {total - LIST_LIMIT} more</td></tr>')
    links = " ".join(f'<a href="{esc(url, quote=True)}">{esc(text)}</a>' for text, url in nav or [])
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{esc(_visible(title))}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"<header>\n<h1>{esc(_visible(title))}</h1>\n" + (f"<nav>{links}</nav>\n" if links else "") + "</header>\n"
        f'<figure id="lineage-graph">\n{svg_element(svg)}\n</figure>\n<p class="note">{esc(note)}</p>\n'
        f'<section id="lineage-nodes">\n<h2>Nodes</h2>\n<table>\n<tr><th>type</th><th>name</th><th>namespace</th><th>id</th><th></th></tr>\n'
        + "\n".join(rows) + "\n</table>\n</section>\n</body>\n</html>\n"
    )


def error_page(status: int, code: str, message: str) -> str:
    """The page a failed picture request shows: says "error", the status and the reason."""
    esc = html.escape
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>error {status}: {esc(code)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<main id="lineage-error" class="error" data-status="{status}">\n<h1>error {status}: {esc(code.replace("_", " "))}</h1>\n'
        f"<p>{esc(_visible(message))}</p>\n</main>\n</body>\n</html>\n"
    )


# ----------------------------------------------------------------------------- the snapshot's picture


@dataclass
class SnapshotPicture:
    """The current graph's largest components, drawn."""

    commit: int
    drawing: Drawing
    svg: bytes
    png: bytes  # compact, at most SNAPSHOT_PNG_MAX_BYTES when one of the SNAPSHOT_DPI allows
    dpi: int
    components: int  # in the current graph
    nodes: int  # in the current graph: jobs and datasets (temporary ones only when a component is named by one)
    shown: list[tuple[str, int, int]]  # (component id, nodes drawn, nodes it has)

    @property
    def summary(self) -> str:
        drawn = sum(d for _c, d, _n in self.shown)
        if not self.shown:
            return "the current graph is empty"
        parts = [f"{len(self.shown)} of {self.components} component{'s' if self.components != 1 else ''}, "
                 f"{drawn} of {self.nodes} nodes drawn"]
        cut = [(c, d, n) for c, d, n in self.shown if d < n]
        for c, d, n in cut:
            parts.append(f"component cut to the {d} nodes nearest {c} (of {n})")
        rest = self.components - len(self.shown)
        if rest:
            rest_nodes = self.nodes - sum(n for _c, _d, n in self.shown)
            parts.append(f"left out: {rest} smaller component{'s' if rest != 1 else ''} with {rest_nodes} nodes")
        return "; ".join(parts)


def _implied_namespaces(nodes: list[Node]) -> frozenset[str]:
    """The most common namespace of the jobs and that of the datasets (when it names more than
    one node): the snapshot's picture says them once, in its title."""
    implied = set()
    for kind in ("JOB", "DATASET"):
        counts: dict[str, int] = {}
        for n in nodes:
            if n.type == kind:
                counts[str(n.data.get("namespace", ""))] = counts.get(str(n.data.get("namespace", "")), 0) + 1
        if counts:
            count, namespace = max((c, ns) for ns, c in counts.items())
            if count > 1:
                implied.add(namespace)
    return frozenset(implied)


def _per_row(drawing: Drawing, components: dict[str, int]) -> int:
    """How many components a row of the snapshot's picture holds: the fewest rows (the least
    height) whose width stays within SNAPSHOT_WIDTH, each component's size (its nodes and edges)
    measured by one layout of the whole graph (Graphviz's `plain` output), the rows and columns
    of the array as wide and tall as their largest component."""
    plain = _dot(drawing.dot, "plain").decode("utf-8", "replace")
    names = {f"n{i}": components.get(n.id, len(components)) for i, n in enumerate(drawing.drawn)}
    boxes: dict[int, list[float]] = {}

    def extend(rank: int, x0: float, y0: float, x1: float, y1: float) -> None:
        box = boxes.setdefault(rank, [x0, y0, x1, y1])
        box[:] = [min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)]

    for line in plain.splitlines():
        parts = line.split(" ")
        if parts[0] == "node" and parts[1] in names:  # node NAME X Y WIDTH HEIGHT ...
            x, y, w, h = (float(v) for v in parts[2:6])
            extend(names[parts[1]], x - w / 2, y - h / 2, x + w / 2, y + h / 2)
        elif parts[0] == "edge" and parts[1] in names:  # edge TAIL HEAD N X1 Y1 ... XN YN ...: the spline's points
            points = [float(v) for v in parts[4:4 + 2 * int(parts[3])]]
            extend(names[parts[1]], min(points[0::2]), min(points[1::2]), max(points[0::2]), max(points[1::2]))
    sizes = [(b[2] - b[0], b[3] - b[1]) for _rank, b in sorted(boxes.items())]
    gap = PACK_MARGIN / 72
    best = (float("inf"), 1)
    for per_row in range(1, len(sizes) + 1):
        widths = [max(w for w, _h in sizes[c::per_row]) for c in range(per_row)]
        heights = [max(h for _w, h in sizes[r:r + per_row]) for r in range(0, len(sizes), per_row)]
        if sum(widths) + gap * (per_row - 1) <= SNAPSHOT_WIDTH or per_row == 1:
            best = min(best, (sum(heights) + gap * (len(heights) - 1), per_row))
    return best[1]


def _component_graph(query, component: str, depth: int) -> LineageGraph:
    """The current graph `depth` job hops around a component's id; when two nodes share that id
    (`dataset:a:b:c` is namespace `a` name `b:c` and namespace `a:b` name `c`), around the
    component's first job instead (jobs are asked for by namespace and name)."""
    import duckdb

    from lineage_assets.warehouse import commits

    try:
        return query.lineage(component, depth=depth)
    except ValueError:
        jobs = commits.duckdb_relation_sql(commits.latest(query.warehouse), "current_jobs")
        with duckdb.connect() as con:
            first = con.execute(f"SELECT job_namespace, job_name FROM ({jobs}) WHERE component_id = ? ORDER BY ALL LIMIT 1",
                                [component]).fetchone()
        if first is None:
            raise
        return query.lineage(node_type="job", namespace=first[0], name=first[1], depth=depth)


def component_sizes(query) -> tuple[int, list[tuple[str, int]]]:
    """(commit, [(component id, jobs and non-temporary datasets), ...] largest first) of the
    current graph the query helper reads."""
    import duckdb

    from lineage_assets.warehouse import commits

    commit = commits.latest(query.warehouse)
    jobs = commits.duckdb_relation_sql(commit, "current_jobs")
    edges = commits.duckdb_relation_sql(commit, "current_lineage")
    con = duckdb.connect()
    try:
        rows = con.execute(
            f"""
            SELECT component_id, count(DISTINCT node) AS nodes FROM (
                SELECT component_id, 'job:' || job_namespace || ':' || job_name AS node FROM ({jobs})
                UNION ALL
                SELECT component_id, 'dataset:' || dataset_namespace || ':' || dataset_name AS node FROM ({edges})
                WHERE NOT coalesce(temporary, false)
            ) GROUP BY component_id ORDER BY nodes DESC, component_id
            """
        ).fetchall()
    finally:
        con.close()
    return commit.seq, [(str(c), int(n)) for c, n in rows]


def planned_components(sizes: list[tuple[str, int]], budget: int) -> list[str]:
    """The components of `sizes` (`component_sizes`, largest first) that `snapshot_picture` draws
    whole with `budget` nodes left, when each shows as many nodes as its size: those that fit,
    in order, while room is left."""
    planned = []
    for component, size in sizes:
        if budget <= 0:
            break
        if size <= budget:
            planned.append(component)
            budget -= size
    return planned


class Neighbourhood:
    """The jobs of one component by their distance from the component's id, for loading the part
    of a component too large to draw whole that `lineage()` walks (`snapshot_picture`)."""

    def __init__(self, warehouse: str, component: str):
        import duckdb

        from lineage_assets.query.node_ids import dataset_node_sql, job_node_sql
        from lineage_assets.warehouse import commits

        commit = commits.latest(warehouse)
        jobs = commits.duckdb_relation_sql(commit, "current_jobs")
        edges = commits.duckdb_relation_sql(commit, "current_lineage")
        with duckdb.connect() as con:
            pairs = con.execute(
                f"SELECT {job_node_sql()}, {dataset_node_sql()} FROM ({edges}) WHERE component_id = ?", [component]).fetchall()
            first = con.execute(f"SELECT {job_node_sql()} FROM ({jobs}) WHERE component_id = ? ORDER BY job_namespace, job_name LIMIT 1",
                                [component]).fetchall()
        self._datasets_of: dict[str, list[str]] = {}
        self._jobs_of: dict[str, list[str]] = {}
        for job, dataset in pairs:
            self._datasets_of.setdefault(job, []).append(dataset)
            self._jobs_of.setdefault(dataset, []).append(job)
        # the nodes whose id is the component's (a job, a dataset's jobs; both when two nodes share
        # it) and its first job (`_component_graph` starts there when two nodes share the id)
        start = {component, *self._jobs_of.get(component, ()), *(job for (job,) in first)}
        self._levels = [{node for node in start if node.startswith("job:")}]
        self._reached = set(start)

    def jobs(self, hops: int) -> frozenset[str]:
        """The jobs (node ids) at most `hops` job-dataset-job steps from the component's id: every
        job `lineage()` reaches from it at depth `hops` (`JobGraph.reach`)."""
        while len(self._levels) <= hops and self._levels[-1]:
            found = {job for node in self._levels[-1] for dataset in self._datasets_of.get(node, ()) for job in self._jobs_of[dataset]}
            self._levels.append(found - self._reached)
            self._reached |= found
        return frozenset().union(*self._levels[:hops + 1])


def snapshot_picture(query, max_nodes: int = SNAPSHOT_MAX_NODES) -> SnapshotPicture:
    """The largest components of the current graph, at most `max_nodes` nodes: whole components,
    largest first, while they fit; when even the largest does not, the nodes nearest its
    component id (one of its nodes; the depth grows while the answer fits). Drawn top to bottom,
    largest first, as many components to a row as fit SNAPSHOT_WIDTH: the Dagster UI shows the
    PNG at its size in a dialog, so a tall picture scrolls one way and a wide one would not fit.

    A query of part of the graph (`LineageQuery(..., part=GraphPart())`) is given the part each
    step needs (`LineageQuery.restrict`): the components the picture draws whole
    (`planned_components`), and around a component too large to draw whole, the jobs near its id
    (`Neighbourhood`), so the picture loads what it draws and not the whole graph. The picture is
    the same either way. The snapshot's picture of `benchmarks/pipeline.py` case c's graph
    (11,702 jobs, 821 components, the largest of 27,205 nodes): 2.8-4.0 s, 3.6 s of it loading
    and indexing every job, -> 1.2-1.5 s."""
    from lineage_assets.query.lineage_query import GraphPart
    from lineage_assets.query.models import answer
    from lineage_assets.query.traversal import MAX_DEPTH

    seq, sizes = component_sizes(query)
    partial = query.part is not None
    nodes: list[Node] = []
    components: dict[str, int] = {}
    shown: list[tuple[str, int, int]] = []
    for index, (component, size) in enumerate(sizes):
        budget = max_nodes - len(nodes)
        if budget <= 0:
            break
        if partial and size <= budget and component not in query.part.components:
            query.restrict(GraphPart(frozenset(planned_components(sizes[index:], budget))))
        if size <= budget:
            graph = _component_graph(query, component, MAX_DEPTH)
        elif nodes:
            continue  # a smaller component may still fit
        else:
            graph, depth = None, 0
            near = Neighbourhood(query.warehouse, component) if partial else None
            while depth < 10_000:
                if near is not None:
                    query.restrict(GraphPart(jobs=near.jobs(depth)))
                grown = _component_graph(query, component, depth)
                if graph is not None and (len(grown.graph) > budget or len(grown.graph) == len(graph.graph)):
                    break
                graph = grown
                if len(grown.graph) > budget:
                    break
                depth += 1
        kept, _rest = nearest(graph, {component}, budget)
        shown.append((component, len(kept), max(size, len(graph.graph))))
        for n in kept:
            components[n.id] = len(shown) - 1
        nodes += kept
    drawn_components = {c for c, _d, _n in shown}
    total = sum(n for _c, _d, n in shown) + sum(n for c, n in sizes if c not in drawn_components)
    graph = answer(nodes)
    implied = _implied_namespaces(nodes)
    title = f"current lineage graph (commit {seq}): the largest components" + (
        f"\nnamespace{'s' if len(implied) > 1 else ''} {' and '.join(sorted(implied))}: not repeated on {'their' if len(implied) > 1 else 'its'} nodes"
        if implied else "")
    how = {"title": title, "max_nodes": max(max_nodes, 1), "rankdir": "TB", "implied_namespaces": implied}
    drawing = draw(graph, (), components=components if len(shown) > 1 else None, **how)
    if len(shown) > 1:
        drawing = draw(graph, (), components=components, per_row=_per_row(drawing, components), **how)
    for dpi in SNAPSHOT_DPI:
        png = render(drawing.dot.replace("digraph lineage {\n", f'digraph lineage {{\n  graph [dpi="{dpi}"]\n', 1), "png", compact=True)
        if len(png) <= SNAPSHOT_PNG_MAX_BYTES:
            break
    return SnapshotPicture(seq, drawing, render(drawing.dot, "svg"), png, dpi, len(sizes), total, shown)
