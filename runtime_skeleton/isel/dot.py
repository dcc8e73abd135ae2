"""Graphviz text for a pii graph or an e-graph snapshot (debugging views)."""
from __future__ import annotations

from .extract import PiiGraph
from .terms import View

_COLORS = ["#e06666", "#3c8ddc", "#6aa84f", "#e69138", "#8e7cc3", "#c27ba0", "#76a5af", "#999999"]


def _color(buffers: list[str], buf: str) -> str:
    if buf not in buffers:
        buffers.append(buf)
    return _COLORS[buffers.index(buf) % len(_COLORS)]


def pii_graph_dot(g: PiiGraph) -> str:
    bufs: list[str] = []
    lines = ["digraph pii {", "  rankdir=BT; node [shape=box, style=filled, fillcolor=white];"]
    for i, n in enumerate(g.nodes):
        label = f"{n.op}\\n{n.type}\\n@{n.buffer}"
        lines.append(f'  n{i} [label="{label}", color="{_color(bufs, n.buffer)}", penwidth=2];')
        lines += [f"  n{a} -> n{i};" for a in n.args]
    lines.append("}")
    return "\n".join(lines) + "\n"


def egraph_dot(view: View) -> str:
    lines = ["digraph egraph {", "  compound=true; node [shape=box];"]
    for c, nodes in view.items():
        lines.append(f'  subgraph cluster_{c} {{ label="e{c}: {view.type(c)}"; style=dashed;')
        for j, n in enumerate(nodes):
            lines.append(f'    c{c}_{j} [label="{n.op}"{", style=filled, fillcolor=lightblue" if n.is_pii else ""}];')
        lines.append("  }")
    for c, nodes in view.items():
        for j, n in enumerate(nodes):
            lines += [f"  c{c}_{j} -> c{k}_0 [lhead=cluster_{k}];" for k in n.children]
    lines.append("}")
    return "\n".join(lines) + "\n"
