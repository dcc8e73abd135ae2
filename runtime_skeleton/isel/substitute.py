"""Soundness of phase 1, checked rather than assumed: substitute each pii θ_{α,?}
with its semantics g_θ(α) (identity instructions with slice/concatenate) to get
an IR computation over the kernel's logical inputs, comparable with the kernel."""
from __future__ import annotations

from ..ir.graph import Module
from ..ir.types import TensorType
from ..target import TargetDef
from . import bflat
from .convert import module_to_terms, to_module
from .extract import PiiGraph
from .terms import Term


def pii_graph_to_module(g: PiiGraph, target: TargetDef, input_types: list[TensorType],
                        output_types: list[TensorType]) -> Module:
    params = [Term("parameter", t.with_layout(None), (), {"parameter_number": i}) for i, t in enumerate(input_types)]
    terms: list[Term] = []
    for n in g.nodes:
        args = [terms[a] for a in n.args]
        if n.kind == "input":
            i = n.attrs["index"]
            on_chip = n.attrs.get("buffer")  # Module.resident: the value as its buffer holds it
            terms.append(_held(params[i], input_types[i], n.type) if on_chip else
                         bflat.flatten(params[i], input_types[i]))  # type: ignore[arg-type]
        elif n.kind == "const":
            terms.append(n.term)  # type: ignore[arg-type]
        elif n.kind == "undef":  # any value: the instruction's result does not depend on it
            terms.append(_zeros(n.type))
        elif n.op == "slice^H":
            terms.append(Term("slice", n.type, tuple(args), {"slice": n.attrs["slice"]}))
        elif n.op == "concat^H":
            terms.append(Term("concatenate", n.type, tuple(args), {"dimensions": n.attrs["dimensions"]}))
        else:
            ins = target.instructions[n.op]
            alpha = {a.name: n.attrs[a.name] for a in ins.comp_attrs}
            (out,) = module_to_terms(target.semantics(ins, alpha), args=args)
            terms.append(out)
    on_chip = any(i == -1 for i, _ in g.resident)
    outs = [_held(terms[o], g.nodes[o].type, t) if on_chip else bflat.unflatten(terms[o], t)
            for o, t in zip(g.outputs, output_types)]
    return to_module(outs, "pii_graph", input_types)  # type: ignore[arg-type]


def _held(x: Term, src: TensorType, dst: TensorType) -> Term:
    """``x`` read as ``dst`` (an on-chip value and the bytes its buffer holds it as)."""
    return bflat.fold(x, bflat.reinterpret_steps(src, dst), bflat.term, bflat.zero_term)


def _zeros(t: TensorType) -> Term:
    return Term("broadcast", t, (bflat.zero_term(t.dtype),), {"dimensions": ()})
