"""The allocation verifier: every constraint of CSP1–CSP4 (allocate.py's module doc)
evaluated on a concrete ``Allocation``. Whatever allocator produced it, an allocation
is used only when this finds nothing wrong."""
from __future__ import annotations

from ..isel.extract import PiiGraph
from ..symbolic import PY
from ..target import TargetDef
from .liveness import LiveRange, interference, is_identity
from .storage import Allocation, const_offsets, extent, input_node, joined, region_inputs, scratch

Violation = tuple[str, str]  # (family, what), as AllocationFailed names its groups


def violations(target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange], a: Allocation) -> list[Violation]:
    """The constraints ``a`` breaks (empty: it is a valid allocation of ``g`` in ``a.order``)."""
    out: list[Violation] = []
    ext = {v: extent(g, target, v) for v in range(len(g.nodes))}
    for v, n in enumerate(g.nodes):
        buf = target.buffers[n.buffer]
        s = a.starts.get(v)
        if s is None or len(s) != len(buf.access_shape) or any(
                not 0 <= x <= size - e for x, size, e in zip(s, buf.access_shape, ext[v])):
            out.append(("CSP4", f"%{v} {n.op} outside buffer {n.buffer}"))
    if out:
        return out
    for v, n in enumerate(g.nodes):
        if n.is_instruction:
            out += _instruction(target, g, a, ext, v)
        elif is_identity(n) and not _identity_holds(g, a, v):
            out.append(("CSP2", f"%{v} {n.op} is not where its operands are"))
    out += _pins(target, g, a, ext)
    out += _apart(target, g, ranges, a, ext)
    out += _disjoint(target, g, ranges, a, ext)
    return out


def _instruction(target: TargetDef, g: PiiGraph, a: Allocation, ext: dict, v: int) -> list[Violation]:
    n = g.nodes[v]
    ins = target.instructions[n.op]
    what = f"%{v} {n.op} @{n.buffer}"
    attrs = a.attrs.get(v, {})
    if any(d.name not in attrs or not d.lo <= attrs[d.name] <= d.hi for d in ins.addr_attrs) or \
            any(attrs.get(d.name) != n.attrs[d.name] for d in ins.comp_attrs):
        return [("CSP1", f"{what}: attributes out of range")]
    if not ins.e(attrs, PY):
        return [("CSP1", what)]
    bounds = ins.h(attrs, PY)
    out = []
    for j, x in enumerate((v, *n.args)):
        starts, lengths = bounds[j]
        if tuple(starts) != a.starts[x] or tuple(lengths) != ext[x]:
            out.append(("CSP1" if j == 0 else "CSP2", what if j == 0 else f"{what} operand %{x}"))
    return out


def _identity_holds(g: PiiGraph, a: Allocation, v: int) -> bool:
    n = g.nodes[v]
    s = a.starts[v]
    if n.op == "slice^H":
        (x,) = n.args
        return all(s[k] == a.starts[x][k] + n.attrs["slice"][k].start for k in range(len(s)))
    (dim,) = n.attrs["dimensions"]
    off = 0
    for x in n.args:
        if any(a.starts[x][k] != s[k] + (off if k == dim else 0) for k in range(len(s))):
            return False
        off += g.nodes[x].type.shape[dim]
    return True


def _pins(target: TargetDef, g: PiiGraph, a: Allocation, ext: dict) -> list[Violation]:
    out: list[Violation] = []
    hbm = target.hbm.name
    for v, n in enumerate(g.nodes):
        if n.kind != "input":
            continue
        i = n.attrs["index"]
        if n.buffer != hbm and any(a.starts[v]):
            out.append(("CSP3", f"input {i} on chip"))
        elif n.buffer == hbm and a.starts[v][0] != a.inputs[i]:
            out.append(("CSP3", f"input {i}"))
    if any(i == -1 for i, _ in g.resident) and any(x for o in g.outputs for x in a.starts[o]):
        out.append(("CSP3", "output on chip"))
    for k, o in enumerate(g.outputs):
        if a.outputs[k] != a.starts[o][0]:
            out.append(("CSP3", f"output {k}"))
    for k, i in g.alias.items():
        if a.outputs[k] != a.inputs[i]:
            out.append(("CSP3", f"output {k} in place of input {i}"))
    offsets = const_offsets(g, target)
    bases = {a.starts[v][0] - off for v, off in offsets.items()}
    if len(bases) > 1 or any(a.consts.get(v) != a.starts[v][0] for v in offsets):
        out.append(("CSP3", "constant section"))
    return out


def _apart(target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange], a: Allocation,
           ext: dict) -> list[Violation]:
    """CSP3's regions apart: a piece's outputs from the inputs and constants; scratch from
    the kernel's inputs and outputs."""
    hbm = target.hbm.name
    inputs = {i: (a.inputs[i], ext[input_node(g, i)][0]) for i in region_inputs(g, target)}
    offsets = const_offsets(g, target)
    section = []
    if offsets:
        base = min(a.starts[v][0] - off for v, off in offsets.items())
        section = [(base, max(off + ext[v][0] for v, off in offsets.items()))]
    out: list[Violation] = []
    hbm_outputs = [(k, o) for k, o in enumerate(g.outputs) if g.nodes[o].buffer == hbm]
    if g.output_written:
        for k, o in hbm_outputs:
            regions = [r for i, r in inputs.items() if g.alias.get(k) != i] + section
            if any(meet(a.starts[o][0], ext[o][0], *r) for r in regions):
                out.append(("CSP3", "outputs apart from the inputs and constants"))
                break
    regions = list(inputs.values()) + [(a.starts[o][0], ext[o][0]) for _, o in hbm_outputs]
    if any(meet(a.starts[v][0], ext[v][0], *r) for v in scratch(g, target, ranges) for r in regions):
        out.append(("CSP3", "HBM scratch apart from the kernel's tensors"))
    if any(meet(a.starts[v][0], ext[v][0], *r) and not within(a.starts[v][0], ext[v][0], *r)
           for v in joined(g, target) for r in inputs.values()):
        out.append(("CSP3", "HBM concatenations within an input or apart from it"))
    return out


def within(s: int, n: int, t: int, m: int) -> bool:
    """[s, s + n) lies in [t, t + m)."""
    return t <= s and s + n <= t + m


def meet(s: int, n: int, t: int, m: int) -> bool:
    """[s, s + n) and [t, t + m) overlap."""
    return s < t + m and t < s + n


def _disjoint(target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange], a: Allocation,
              ext: dict) -> list[Violation]:
    """CSP4: storage live at the same time in the same buffer (the interference graph φ)
    does not overlap; one violation per buffer."""
    out: list[Violation] = []
    for u, v in sorted(interference(g, ranges)):
        name = g.nodes[u].buffer
        if (("CSP4", name) not in out
                and all(meet(p, e, q, f) for p, e, q, f in zip(a.starts[u], ext[u], a.starts[v], ext[v]))):
            out.append(("CSP4", name))
    return out
