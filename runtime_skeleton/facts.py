"""A target's derived facts as text: ``python -m generated.<t> info --facts``, and the
``facts.txt`` that ``actgen`` writes into every generated package, so a change to a
description shows up in review as a change to what the compiler derives from it.

One section per fact: each instruction's semantics as phase 1 matches it, the rules kept
for the target, the tile sizes and dots instructions compute, the rows one instruction
writes per buffer, the contractions and operators per buffer, the element types
instructions write, and the fuzzer's profile. Sorted, so the text is the same on every
machine.
"""
from __future__ import annotations

import textwrap

from .fuzz.profile import profile
from .isel.isa_rules import Pattern
from .isel.obstacles import written_types
from .isel.phase1 import target_facts, target_ops
from .target import TargetDef
from .target_info import target_info


def facts_text(target: TargetDef) -> str:
    facts, info, prof = target_facts(target), target_info(target), profile(target)
    out = [f"target {target.name}", "", "instructions (semantics as phase 1 matches them; α at its range):"]
    for p in sorted(facts.patterns, key=lambda p: p.ins.name):
        alpha = ", ".join(f"{a.name}∈[{a.lo},{a.hi}]" for a in p.ins.comp_attrs)
        out.append(f"  {p.ins.name}({alpha}) -> {p.ins.output.buffer}: {_term(p, p.root)}")
    isa = sum(r.name.startswith("isa:") for r in facts.rules)
    out += ["", f"rules: {len(facts.rules)} ({isa} IR-to-ISA, {len(facts.rules) - isa} axioms and others)"]
    out += textwrap.wrap(", ".join(sorted(r.name for r in facts.rules if not r.name.startswith("isa:"))), 100,
                         initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)
    out += ["", "operators instructions compute: " + ", ".join(sorted(target_ops(facts.patterns)))]
    out += ["", "tile sizes per (operator, dtype) (extents, share, whole):"]
    for (op, dt), sizes in sorted(facts.tiles.items()):
        out.append(f"  {op} {dt}: " + "; ".join(f"{'x'.join(map(str, e))} {s:g} {w}" for e, s, w in sorted(sizes)))
    out += ["", "dots (lhs, rhs, result): " + ", ".join("(" + ", ".join(d) + ")" for d in sorted(facts.dots))]
    out += ["", "element types instructions write: " + ", ".join(sorted(written_types(target)))]
    out += ["", "rows one instruction writes, per on-chip buffer:"]
    out += [f"  {b}: {n}" for b, n in info.rows_per_write.items()]
    out += ["", "longest contraction one instruction performs, per buffer:"]
    out += [f"  {b} {op}: {n}" for (b, op), n in info.contractions.items()]
    out += ["", "operators instructions compute, per buffer written (element-wise or not: rows):"]
    for (op, dt, elementwise), at in info.computes.items():
        where = ", ".join(f"{b} {n}" for b, n in at.items())
        out.append(f"  {op} {dt} {'element-wise' if elementwise else 'any'}: {where}")
    out += ["", f"fuzz profile: dtypes {', '.join(prof.dtypes)}; accumulators "
            + ", ".join(f"{a}->{b}" for a, b in sorted(prof.accumulators.items()))
            + f"; dimensions {', '.join(map(str, prof.dims))}; at most {prof.max_elements} elements"]
    return "\n".join(out) + "\n"


def _term(p: Pattern, k: int) -> str:
    n = p.nodes[k]
    if n.param is not None:
        return f"{n.dtype} in{n.param}"
    head = f"{n.dtype} {n.op}"
    return f"{head}({', '.join(_term(p, c) for c in n.children)})" if n.children else head

