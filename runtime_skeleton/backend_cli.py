"""The command line every generated backend package shares:

    python -m generated.<t> info
    python -m generated.<t> run PROG.s (--inputs IN.npz | --random SEED) -o OUT.npz [--expect KERNEL.hlo]
    python -m generated.<t> isel KERNEL.hlo [--show N] [--dot FILE] [--egraph-dot FILE] [--check]
    python -m generated.<t> compile KERNEL.hlo -o PROG.s [--json FILE] [--verify] [--deterministic] [--timeout S]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

from .cli_util import run_cli
from .errors import ActgenError
from .target import TargetDef


def _info(target: TargetDef) -> int:
    print(f"target {target.name} (from {target.source})")
    for b in target.buffers.values():
        kind = "hbm   " if b.is_hbm else "buffer"
        print(f"  {kind} {b.name}: {b.dtype.name}{list(b.unit_shape)} x {list(b.access_shape)}")
    for ins in target.instructions.values():
        alpha = ", ".join(f"{a.name}∈[{a.lo},{a.hi}]" for a in ins.comp_attrs)
        beta = ", ".join(f"{a.name}∈[{a.lo},{a.hi}]" for a in ins.addr_attrs)
        reads = ", ".join(s.buffer for s in ins.inputs)
        print(f"  {ins.name}({alpha}; {beta})  {reads or '-'} -> {ins.output.buffer}  on {ins.engine}")
    return 0


def _run(target: TargetDef, ns: argparse.Namespace) -> int:
    from .reference.npz_io import load_inputs, random_inputs, save_arrays
    from .sim import parse_program, run_program

    prog_path = pathlib.Path(ns.program)
    prog = parse_program(prog_path.read_text(), str(prog_path))
    types = [d.type for d in prog.inputs]
    inputs = load_inputs(ns.inputs, types) if ns.inputs else random_inputs(types, ns.random)
    outputs = run_program(target, prog, inputs)
    arrays = {f"out{i}": o for i, o in enumerate(outputs)}
    if ns.random is not None:
        arrays.update({f"arg{i}": a for i, a in enumerate(inputs)})
    save_arrays(ns.output, arrays)
    print(f"{ns.program}: ran {len(prog.instructions)} instructions; wrote {len(outputs)} output(s) to {ns.output}")
    if ns.expect:
        return _compare_with_reference(ns.expect, inputs, outputs)
    return 0


def _compare_with_reference(kernel: str, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> int:
    from .hlo import parse_file
    from .reference import evaluate
    from .reference.compare import compare_outputs

    module = parse_file(kernel)
    expected = evaluate(module, inputs)
    problems = compare_outputs(outputs, expected)
    if problems:
        for p in problems:
            print(f"MISMATCH {p}", file=sys.stderr)
        return 1
    print(f"matches the reference interpreter on {kernel}")
    return 0


def _isel(target: TargetDef, ns: argparse.Namespace) -> int:
    from .hlo import parse_file
    from .isel.dot import egraph_dot, pii_graph_dot
    from .isel.phase1 import InstructionSelector, Limits, NoPiiGraph

    module = parse_file(ns.kernel)
    sel = InstructionSelector(target, module, Limits(timeout=ns.timeout))
    shown = 0
    for g in sel.pii_graphs():
        shown += 1
        print(f"# pii graph {shown}: {g.num_instructions} instructions, {len(g.nodes)} nodes")
        print(g.describe())
        if ns.check:
            print("# " + _check_pii_graph(target, sel, g, module))
        if ns.dot and shown == 1:
            pathlib.Path(ns.dot).write_text(pii_graph_dot(g))
        if shown >= ns.show:
            break
    st = sel.stats
    print(f"# e-graph: {st.saturation.nodes} nodes, {st.saturation.classes} classes after "
          f"{st.saturation.iterations} iterations ({'saturated' if st.saturation.saturated else 'not saturated'}); "
          f"saturation {st.saturation.seconds:.2f}s, extraction {st.extraction_seconds:.2f}s")
    if ns.egraph_dot:
        pathlib.Path(ns.egraph_dot).write_text(egraph_dot(sel.eg.view))
    if shown == 0:
        raise NoPiiGraph(sel.explain())
    return 0


def _check_pii_graph(target: TargetDef, sel, g, module) -> str:  # noqa: ANN001
    from .isel.substitute import pii_graph_to_module
    from .reference import evaluate
    from .reference.compare import compare_outputs
    from .reference.npz_io import random_inputs

    sub = pii_graph_to_module(g, target, sel.input_types, sel.output_types)
    x = random_inputs(sel.input_types, 0)
    problems = compare_outputs(evaluate(sub, x), evaluate(module, x))
    if problems:
        raise ActgenError("UNSOUND pii graph (a bug in actgen): " + "; ".join(problems))
    return "substituting the semantics back computes the kernel (checked on random inputs)"


def _compile(target: TargetDef, ns: argparse.Namespace) -> int:
    import json

    from .compile import CompileOptions, compile_hlo, verify

    opts = CompileOptions(timeout=ns.timeout, deterministic=ns.deterministic, patience=ns.patience)
    res = compile_hlo(target, pathlib.Path(ns.kernel), opts)
    pathlib.Path(ns.output).write_text(res.text)
    if ns.json:
        pathlib.Path(ns.json).write_text(json.dumps(res.json(), indent=1) + "\n")
    st = res.stats
    print(f"{ns.kernel} -> {ns.output}: {len(res.program.instructions)} instructions, cost {res.cost:g} "
          f"(candidate {st.best_index} of {st.candidates}; {st.pii_graphs} pii graphs, {st.orders_tried} orders)")
    print(f"  time {st.seconds:.2f}s: phase 1 {st.phase1_seconds:.2f}s, phase 2 {st.phase2_seconds:.2f}s, "
          f"emit {st.emit_seconds:.2f}s")
    if ns.verify:
        problems = verify(target, res)
        if problems:
            for p in problems:
                print(f"MISMATCH {p}", file=sys.stderr)
            raise ActgenError(f"the compiled program does not compute {ns.kernel} (a bug in actgen)")
        print("  verified: the simulator matches the reference interpreter on random inputs")
    return 0


def main(target: TargetDef, argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m generated.{target.name}",
                                 description=f"Backend for the {target.name} accelerator (generated by actgen).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="print the buffers and instructions of the target")
    run = sub.add_parser("run", help="run an assembly program on the functional simulator")
    run.add_argument("program", help="assembly program (.s)")
    src = run.add_mutually_exclusive_group(required=True)
    src.add_argument("--inputs", help="npz with arg0, arg1, ... in .input order")
    src.add_argument("--random", type=int, metavar="SEED", help="make random inputs (saved beside the outputs)")
    run.add_argument("-o", "--output", required=True, help="npz to write out0, out1, ... to")
    run.add_argument("--expect", metavar="KERNEL.hlo",
                     help="also run the kernel on the reference interpreter and fail (exit 1) on mismatch")

    isel = sub.add_parser("isel", help="phase 1 only: print the pii graphs instruction selection finds")
    isel.add_argument("kernel", help="HLO module (as jax.jit(f).lower(...).as_text(dialect='hlo') prints it)")
    isel.add_argument("--show", type=int, default=1, metavar="N", help="print the first N pii graphs (default 1)")
    isel.add_argument("--dot", metavar="FILE", help="write Graphviz of the first pii graph")
    isel.add_argument("--egraph-dot", metavar="FILE", help="write Graphviz of the e-graph")
    isel.add_argument("--check", action="store_true", help="check each shown pii graph against the kernel")
    isel.add_argument("--timeout", type=float, default=20.0, help="seconds for phase 1 (default 20)")

    comp = sub.add_parser("compile", help="compile an HLO kernel to an assembly program")
    comp.add_argument("kernel", help="HLO module (as jax.jit(f).lower(...).as_text(dialect='hlo') prints it)")
    comp.add_argument("-o", "--output", required=True, help="assembly program to write (.s)")
    comp.add_argument("--json", metavar="FILE", help="also write the program, cost and statistics as JSON")
    comp.add_argument("--verify", action="store_true",
                      help="run the program on the simulator against the reference interpreter; fail on mismatch")
    comp.add_argument("--deterministic", action="store_true",
                      help="byte-identical output on every run (one CP-SAT worker, fixed seed)")
    comp.add_argument("--timeout", type=float, default=60.0, help="seconds for the whole compilation (default 60)")
    comp.add_argument("--patience", type=float, default=2.0, metavar="N",
                      help="stop when no candidate improved for N times the time to the best (default 2)")

    def go(args: list[str] | None) -> int:
        ns = ap.parse_args(args)
        if ns.cmd == "info":
            return _info(target)
        if ns.cmd == "isel":
            return _isel(target, ns)
        if ns.cmd == "compile":
            return _compile(target, ns)
        return _run(target, ns)

    return run_cli(go, argv)


__all__ = ["ActgenError", "main"]
