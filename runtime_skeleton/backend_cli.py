"""The command line every generated backend package shares:

    python -m generated.<t> info
    python -m generated.<t> run PROG.s (--inputs IN.npz | --random SEED) -o OUT.npz [--expect KERNEL.hlo] [--trace FILE.json]
    python -m generated.<t> isel KERNEL.hlo [--show N] [--dot FILE] [--egraph-dot FILE] [--check]
    python -m generated.<t> compile KERNEL.hlo -o PROG.s [--json FILE] [--verify] [--deterministic] [--timeout S] [--jobs N]
"""
from __future__ import annotations

import argparse
import functools
import pathlib
import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from . import progress
from .cli_util import add_common_flags, at_least, refuse_overwrite, run_cli
from .errors import ActgenError, SourceLoc, read_source
from .executor import EXECUTORS
from .program import print_program
from .superopt.passes import PASS_NAMES
from .target import TargetDef

KERNEL_HELP = ("kernel file: HLO text (as jax.jit(f).lower(...).as_text(dialect='hlo') prints it, or an XLA dump), "
               "StableHLO text (JAX's default as_text()) or a serialized HloModuleProto (.pb); the last two "
               "need jax installed; - for standard input")

MAX_FUZZ_NODES = 1000  # nodes of a fuzz kernel (docs/limits.md): Act's kernels have 7-89

if TYPE_CHECKING:
    from .ir.graph import Module
    from .program import Program
    from .sim.roofline import Roofline
    from .sim.timing import Timing

TILES_FIRST_HELP = ("phase 1's schedule. Default: a kernel of several tiles enters cut to its instructions' tiles, "
                    "and the lowering rules (matmuls for negations or broadcasts, e.g. on Gemmini) run from the "
                    "first round until the e-graph is a fixed multiple of the kernel, then the cheap rules first in a new "
                    "e-graph; --tiles-first: the lowering rules until half the node limit; --no-tiles-first: "
                    "neither, the kernel as written and the cheap rules first")


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


def _facts(target: TargetDef) -> int:
    from .facts import facts_text

    print(facts_text(target), end="")
    return 0


def _run(target: TargetDef, ns: argparse.Namespace) -> int:
    from .hlo import parse_file
    from .reference.npz_io import load_inputs, random_inputs, save_arrays
    from .sim import parse_program, roofline, run_program, time_program
    from .program import ProgramError

    refuse_overwrite({"-o": ns.output, "--trace": ns.trace},
                     {"the program": ns.program, "the inputs": ns.inputs, "the kernel": ns.expect})
    prog_path = pathlib.Path(ns.program)
    prog = parse_program(read_source(prog_path, ProgramError), str(prog_path))
    if not prog.outputs:
        raise ProgramError("the program declares no '.output': it computes nothing to write",
                           SourceLoc(str(prog_path), 1, 1))
    types = [d.type for d in prog.inputs]
    # bound by name: a program may declare its inputs in any order
    inputs = load_inputs(ns.inputs, types, [d.name for d in prog.inputs]) if ns.inputs else \
        random_inputs(types, ns.random)
    if ns.native:
        from .emit.native import native_function

        t0 = time.perf_counter()
        outputs = native_function(target, prog)(*inputs)
        how = f"natively on this CPU in {time.perf_counter() - t0:.3f}s (build included)"
    else:
        outputs, how = run_program(target, prog, inputs), "on the simulator"
    arrays = {d.name: o for d, o in zip(prog.outputs, outputs)}
    if ns.random is not None:
        arrays.update({d.name: a for d, a in zip(prog.inputs, inputs)})
    save_arrays(ns.output, arrays)
    print(f"{ns.program}: ran {prog.executed()} instructions {how}; wrote {len(outputs)} output(s) to {ns.output}")
    module = parse_file(ns.expect) if ns.expect else None
    timing = time_program(target, prog)
    _print_timing(timing, roofline(target, prog, module))
    if ns.trace:
        pathlib.Path(ns.trace).write_text(timing.trace_json())
        print(f"trace of {len(timing.instrs)} instructions written to {ns.trace} (open in ui.perfetto.dev)")
    if module is not None:
        return _compare_with_reference(ns.expect, module, _numbered(prog.inputs, inputs, "arg"),
                                       _numbered(prog.outputs, outputs, "out"))
    return 0


def _numbered(decls: list, values: list, prefix: str) -> list:
    """``values`` in the kernel's order: by the number in names ``<prefix>K`` when the
    program names them so (as the compiler does), else as declared."""
    numbers = [d.name[len(prefix):] for d in decls]
    if all(d.name.startswith(prefix) and n.isdigit() for d, n in zip(decls, numbers)) and \
            sorted(map(int, numbers)) == list(range(len(decls))):
        order = sorted(range(len(decls)), key=lambda i: int(numbers[i]))
        return [values[i] for i in order]
    return values


def _print_timing(timing: Timing, roof: Roofline) -> None:
    """The summary line, then per-engine busy time and the bytes moved between buffers."""
    pct = roof.percent(timing.cycles)
    if pct is not None:
        shown = f"{pct:.1f}%"
    else:
        shown = f"n/a ({roof.reason or 'the program takes no time'})"
    print(f"cycles: {timing.cycles}  roofline: {shown}")
    if roof.t_peak is not None:
        flops = ", ".join(f"{k} {d} {n}" for (k, d), n in roof.flops.items()) or "none"
        print(f"  T_peak {roof.t_peak:g} cycles, set by {roof.bound()}: {roof.bytes_min} bytes to/from HBM "
              f"({roof.t_memory:g} cycles); flops {flops}")
        if roof.unplaced:
            left = ", ".join(f"{k} {d} {n}" for (k, d), n in roof.unplaced.items())
            print(f"  not in the bound (no peak of the target runs them): {left}")
    busy = [(e, str(b), f"{100 * timing.utilization(e):.1f}%") for e, b in timing.busy.items()]
    moved = [(src, dst, str(n)) for (src, dst), n in timing.bytes_moved.items()]
    _table("engine busy", ("engine", "cycles", "busy"), busy, text_columns=1)
    _table("bytes moved", ("from", "to", "bytes"), moved, text_columns=2)


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]], text_columns: int,
           text_last: bool = False) -> None:
    """A rich table when rich is installed, else plain aligned text; the columns after
    the first ``text_columns`` hold numbers and are right-aligned (but the last, with ``text_last``)."""
    text = set(range(text_columns)) | ({len(header) - 1} if text_last else set())
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        print(f"{title}:")
        for r in [header, *rows]:
            print("  " + "  ".join(c.ljust(w) if i in text else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(r, widths))))
        return
    table = Table(title=title, title_justify="left")
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i in text else "right")
    for r in rows:
        table.add_row(*r)
    Console(file=sys.stdout, highlight=False).print(table)


def _compare_with_reference(kernel: str, module: Module, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> int:
    from .reference import evaluate
    from .reference.compare import compare_outputs

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
    from .ir.inline import inline_calls
    from .isel.obstacles import kernel_obstacles, refusal
    from .isel.phase1 import InstructionSelector, Limits, NoPiiGraph

    refuse_overwrite({"--dot": ns.dot, "--egraph-dot": ns.egraph_dot}, {"the kernel": ns.kernel})
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
        inlined = inline_calls(module)
        found = kernel_obstacles(target, inlined)
        raise NoPiiGraph(refusal(target, found), found[0].loc) if found else NoPiiGraph(sel.explain())
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

    if len(ns.kernel) > 1 or pathlib.Path(ns.output).is_dir():
        return _compile_batch(target, ns)
    ns.kernel = ns.kernel[0]
    if ns.executor != "local":
        raise ActgenError(f"--executor {ns.executor} runs a batch (several kernels, or -o a directory) on other machines; "
                          "one kernel compiles here")
    if ns.jobs > 1 and ns.deterministic:
        print("note: --deterministic compiles in one process; --jobs is ignored", file=sys.stderr)
    refuse_overwrite({"-o": ns.output, "--json": ns.json}, {"the kernel": ns.kernel})
    opts = CompileOptions(timeout=ns.timeout, deterministic=ns.deterministic, patience=ns.patience,
                          tiling=not ns.no_tiling, jobs=ns.jobs, tiles_first=ns.tiles_first)
    if ns.emit == "so" and ns.output == "-":
        raise ActgenError("--emit so writes a shared library: give -o a file, not -")
    _native_before_compiling(target, ns)
    with progress.shown(f"compiling {ns.kernel}", enabled=False if ns.quiet or ns.verbose else None), \
            progress.logged(ns.verbose):
        res = compile_hlo(target, pathlib.Path(ns.kernel), opts)
    _write_program(target, res.text, ns.output, ns.emit, res.program)
    if ns.json:
        pathlib.Path(ns.json).write_text(json.dumps(res.json(), indent=1) + "\n")
    if ns.dump_after:
        _dump_after(res, ns.dump_after)
    st = res.stats
    say = functools.partial(print, file=sys.stderr if ns.output == "-" else sys.stdout)
    if ns.quiet:
        say = _silent
    say(f"{ns.kernel} -> {ns.output}: {res.program.executed()} instructions, cost {res.cost:g} "
        f"(candidate {st.best_index} of {st.candidates}; {st.pii_graphs} pii graphs, {st.orders_tried} orders)")
    say(f"  time {st.seconds:.2f}s: " + ", ".join(f"{what} {st.spent.get(what, 0.0):.2f}s" for what in SPENT
                                                  if what in st.spent or what in SPENT[:3] + SPENT[-1:]))
    if res.parts:
        why = "the whole kernel: none found within its share of the time"
        if res.part_kind == "piece":
            why += ", or loops that compute a broadcast value in every iteration, which cost more"
        say(f"  in {len(res.parts)} {res.part_kind}s, one program each in sequence: {res.describe_loops()} ({why})")
    elif res.tiling is not None:
        say(f"  strip-mined: {res.describe_loops()} "
            "(straight-line code: too large, or none found within its share of the time)")
    if ns.verify:
        for native in (False, True) if ns.native else (False,):
            where = "its native run on this CPU" if native else "the simulator"
            problems = verify(target, res, native=native)
            if problems:
                for p in problems:
                    print(f"MISMATCH {p}", file=sys.stderr)
                raise ActgenError(f"{where} does not compute {ns.kernel} (a bug in actgen"
                                  + (" or in the description's native texts)" if native else ")"))
            say(f"  verified: {where} matches the reference interpreter on random inputs")
    elif ns.native:
        raise ActgenError("--native checks the native run: give --verify too")
    return 0


SPENT = ("phase 1", "phase 2", "emit", "loops", "other")  # the activities of the time line, in order


def _dump_after(res, name: str) -> None:  # noqa: ANN001
    """The program of each loop nest in ``res`` (its parts' too) after pass ``name``, to standard
    error; a note where that pass did not run or changed nothing."""
    results = list(res.parts) or [res]
    for k, part in enumerate(results):
        which = f"{res.part_kind} {k}: " if res.parts else ""
        if not part.stages:
            print(f"# {which}straight-line code: no loop nest, so no pass ran", file=sys.stderr)
            continue
        stage = next((s for s in part.stages if s.name == name), None)
        if stage is None:
            ran = ", ".join(s.name for s in part.stages)
            print(f"# {which}{name} changed nothing or was not kept (the stages kept: {ran})", file=sys.stderr)
            continue
        print(f"# {which}after {name} ({stage.seconds:.3f} s)", file=sys.stderr)
        sys.stderr.write(print_program(stage.program))


def _compile_batch(target: TargetDef, ns: argparse.Namespace) -> int:
    """Each kernel to DIR/<name>.s (.c, .so with --emit), then one table; exit 2 when a kernel
    did not compile, 1 when a program disagrees with the reference."""
    from .batch import compile_batch
    from .compile import CompileOptions

    out = pathlib.Path(ns.output)
    if ns.output == "-" or ns.json:
        raise ActgenError("a batch writes one file per kernel into the directory -o names (no -, no --json)")
    kernels = [pathlib.Path(k) for k in ns.kernel]
    stems = [k.stem for k in kernels]
    twice = next((s for s in stems if stems.count(s) > 1), None)
    if twice is not None:
        raise ActgenError(f"two kernels are named {twice}: their programs would overwrite each other in {out}")
    _native_before_compiling(target, ns)
    out.mkdir(parents=True, exist_ok=True)
    suffix = {"asm": ".s", "c": ".c", "so": ".so"}[ns.emit]
    refuse_overwrite({str(out / (k.stem + suffix)): str(out / (k.stem + suffix)) for k in kernels},
                     {f"the kernel {k}": str(k) for k in kernels})
    if ns.native and not ns.verify:
        raise ActgenError("--native checks the native runs: give --verify too")
    opts = CompileOptions(timeout=ns.timeout, patience=ns.patience, tiling=not ns.no_tiling,
                          tiles_first=ns.tiles_first)
    with progress.shown(f"compiling {len(kernels)} kernels", enabled=False if ns.quiet else None):
        rows = compile_batch(target, kernels, opts, jobs=ns.jobs, executor=ns.executor, address=ns.address,
                             check=ns.verify, native=ns.native)
    table = []
    for k, row in zip(kernels, rows):
        if row.program is not None:
            _write_program(target, row.program, str(out / (k.stem + suffix)), ns.emit)
        status = "no program" if row.program is None else \
            ("MISMATCH" if row.mismatch else ("verified" + (" natively" if ns.native else "")) if row.verified
             else "not run natively" if row.not_run_natively else "compiled")
        table.append((k.name, status, str(row.instructions) if row.program else "",
                      f"{row.cost:g}" if row.program else "", f"{row.seconds:.2f}", _shorter(row.error, 100)))
    if not ns.quiet:
        _table(f"{len(rows)} kernels -> {out}", ("kernel", "status", "instructions", "cost", "seconds", "why"),
               table, text_columns=2, text_last=True)
    if any(r.mismatch for r in rows):
        return 1
    unrun = any(r.program is not None and ns.verify and not r.verified for r in rows)  # e.g. the CPU lacks a feature
    return 2 if unrun or any(r.program is None for r in rows) else 0


def _native_before_compiling(target: TargetDef, ns: argparse.Namespace) -> None:
    """C, a shared library or a native run of a target without native texts: said before the search."""
    if ns.emit != "asm" or ns.native:
        from .emit.native import require_native

        require_native(target)


def _shorter(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


def _write_program(target: TargetDef, text: str, output: str, emit: str, prog: Program | None = None) -> None:
    """The program (assembly ``text``; ``prog`` parsed from it when not given) as ``--emit``
    asks: the assembly, its C, or the built shared library; ``-``: standard output, where
    the status then goes to standard error."""
    if emit != "asm":
        from .emit.native import build, c_source
        from .program import parse_program

        prog = prog or parse_program(text, output)
        if emit == "so":
            build(target, prog, pathlib.Path(output))
            return
        text = c_source(target, prog)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        pathlib.Path(output).write_text(text)


def _silent(*_args: object, **_kwargs: object) -> None:
    pass


def _fuzz(target: TargetDef, ns: argparse.Namespace) -> int:
    from .fuzz.run import fuzz

    try:
        report = fuzz(target, ns.n, ns.seed, ns.max_nodes, ns.timeout_per_kernel, ns.out, ops=ns.ops,
                      jobs=ns.jobs, probe=not ns.unfiltered, tiles_first=ns.tiles_first,
                      from_programs=ns.from_programs, executor=ns.executor, address=ns.address)
    except ValueError as err:  # a bad --ops or --max-nodes
        raise ActgenError(str(err)) from None
    return 1 if report.failed else 0


def main(target: TargetDef, argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m generated.{target.name}",
                                 description=f"Backend for the {target.name} accelerator (generated by actgen).")
    add_common_flags(ap)
    sub = ap.add_subparsers(dest="cmd", required=True)
    info = sub.add_parser("info", help="print the buffers and instructions of the target")
    info.add_argument("--facts", action="store_true",
                      help="print what the compiler derives from the description instead (as the generated "
                           "package's facts.txt holds it)")
    run = sub.add_parser("run", help="run an assembly program on the functional simulator")
    run.add_argument("program", help="assembly program (.s)")
    src = run.add_mutually_exclusive_group(required=True)
    src.add_argument("--inputs", help="npz with the inputs by their .input names (arg0, arg1, ... in compiled programs)")
    src.add_argument("--random", type=at_least(int, 0), metavar="SEED", help="make random inputs (saved beside the outputs)")
    run.add_argument("-o", "--output", required=True,
                     help="npz to write the outputs to, by their .output names (out0, out1, ...)")
    run.add_argument("--expect", metavar="KERNEL.hlo",
                     help="also run the kernel on the reference interpreter and fail (exit 1) on mismatch; "
                          "the roofline counts the kernel's flops")
    run.add_argument("--native", action="store_true",
                     help="run the program as C on this CPU (the description's native texts; the simulator's bound "
                          "checks run first, over every loop iteration) instead of on the simulator")
    run.add_argument("--trace", metavar="FILE.json",
                     help="write the timing model's engine timeline as Chrome-trace/Perfetto JSON "
                          "(microseconds of the target's clock; each event's cycles among its args)")

    isel = sub.add_parser("isel", help="phase 1 only: print the pii graphs instruction selection finds")
    isel.add_argument("kernel", help=KERNEL_HELP)
    isel.add_argument("--show", type=at_least(int, 0), default=1, metavar="N",
                      help="print the first N pii graphs (default 1)")
    isel.add_argument("--dot", metavar="FILE", help="write Graphviz of the first pii graph")
    isel.add_argument("--egraph-dot", metavar="FILE", help="write Graphviz of the e-graph")
    isel.add_argument("--check", action="store_true", help="check each shown pii graph against the kernel")
    isel.add_argument("--timeout", type=at_least(float, 0, strict=True), default=20.0,
                      help="seconds for phase 1 (default 20)")

    comp = sub.add_parser("compile", help="compile an HLO kernel to an assembly program")
    comp.add_argument("kernel", nargs="+", help=KERNEL_HELP + "; several: a batch, -o names a directory")
    comp.add_argument("-o", "--output", required=True, help="assembly program to write (.s); - for standard output "
                      "(the status then goes to standard error)")
    comp.add_argument("--json", metavar="FILE", help="also write the program, cost and statistics as JSON")
    comp.add_argument("--verify", action="store_true",
                      help="run the program on the simulator against the reference interpreter; fail on mismatch")
    comp.add_argument("--deterministic", action="store_true",
                      help="ignore --jobs: every compilation in one process gives the same program on any "
                           "machine and under any load (its limits count work, not seconds)")
    comp.add_argument("--timeout", type=at_least(float, 0, strict=True), default=60.0,
                      help="work-seconds for the whole compilation, about seconds of a 2-core AMD EPYC; "
                           "the wall clock stops it at 3 times that (default 60)")
    comp.add_argument("--patience", type=at_least(float, 0), default=2.0, metavar="N",
                      help="stop when no candidate improved for N times the time to the best (default 2)")
    comp.add_argument("--no-tiling", action="store_true",
                      help="straight-line code only: do not strip-mine a kernel that does not compile into loops")
    comp.add_argument("--jobs", type=at_least(int, 1), default=1, metavar="N",
                      help="compile the loop-nest candidates of a large kernel in N processes at once; faster, "
                           "but which program wins then depends on the machine (default 1)")
    comp.add_argument("--tiles-first", action=argparse.BooleanOptionalAction, default=None, help=TILES_FIRST_HELP)
    comp.add_argument("--emit", choices=("asm", "c", "so"), default="asm",
                      help="what -o receives: the assembly program (default), the program as C (the "
                           "description's native texts), or that C built into a shared library with the system's "
                           "compiler (entry point: void actgen_kernel(uint8_t *hbm))")
    comp.add_argument("--dump-after", choices=PASS_NAMES, metavar="PASS",
                      help="print the chosen loop nest's program after PASS to standard error: "
                           + ", ".join(PASS_NAMES) + f" ({PASS_NAMES[0]}: as assembled, before any pass)")
    comp.add_argument("--executor", choices=EXECUTORS, default="local",
                      help="where a batch's kernels compile: local processes (--jobs of them) or a Ray cluster "
                           "(a local one, or the one at --address; needs pip install 'actgen[ray]')")
    comp.add_argument("--address", metavar="HOST:PORT", help="the Ray cluster of --executor ray (default: start one here)")
    comp.add_argument("--native", action="store_true",
                      help="with --verify, also run the program natively on this CPU against the reference")
    comp.add_argument("-q", "--quiet", action="store_true",
                      help="print nothing but errors (no status line while it compiles, no summary)")

    fz = sub.add_parser("fuzz", help="compile and verify random kernels of Act's ten fuzzing operators (Act §9.4)")
    fz.add_argument("--n", type=at_least(int, 0), default=20, help="number of kernels (default 20)")
    fz.add_argument("--seed", type=int, default=0, help="seed of the first kernel; the next ones count up (default 0)")
    fz.add_argument("--max-nodes", type=at_least(int, 1, high=MAX_FUZZ_NODES), default=None, metavar="M",
                    help=f"at most M nodes per kernel (default 90, at most {MAX_FUZZ_NODES})")
    fz.add_argument("--timeout-per-kernel", type=at_least(float, 0, strict=True), default=10.0, metavar="S",
                    help="compile time limit per kernel in seconds (default 10)")
    fz.add_argument("--out", default="fuzz_failures", metavar="DIR",
                    help="where failing kernels are saved as fuzz_<seed>.hlo (default fuzz_failures)")
    fz.add_argument("--jobs", type=at_least(int, 1), default=1, metavar="N",
                    help="check kernels in N processes at once (default 1; the report is the same)")
    fz.add_argument("--executor", choices=EXECUTORS, default="local",
                    help="where kernels are checked: local processes, or a Ray cluster (the report is the same)")
    fz.add_argument("--address", metavar="HOST:PORT", help="the Ray cluster of --executor ray (default: start one here)")
    fz.add_argument("--ops", default=None, metavar="OP,OP",
                    help="use only these of the ten operators (default all: dot,broadcast,reduce,reverse,add,"
                         "subtract,negate,minimum,maximum,clamp)")
    fz.add_argument("--tiles-first", action=argparse.BooleanOptionalAction, default=None, help=TILES_FIRST_HELP)
    fz.add_argument("--from-programs", action="store_true",
                    help="instead of operator kernels, draw random valid programs of the target (3-30 instructions) "
                         "and compile the kernels they compute; also report which compiled programs cost more "
                         "cycles than the random one")
    fz.add_argument("--unfiltered", action="store_true",
                    help="draw every operator in every dtype of the target; by default only the (operator, dtype) "
                         "pairs whose one-operator kernel compiles are drawn (probed once, then cached)")

    for name, p in sub.choices.items():
        add_common_flags(p, with_version=False, verbose_also="print the search's decisions (strategies, options, their "
                         "outcomes, with the work clock) on standard error" if name == "compile" else "")

    def go(args: list[str] | None) -> int:
        ns = ap.parse_args(args)
        if ns.cmd == "info":
            return _facts(target) if ns.facts else _info(target)
        if ns.cmd == "isel":
            return _isel(target, ns)
        if ns.cmd == "compile":
            return _compile(target, ns)
        if ns.cmd == "fuzz":
            return _fuzz(target, ns)
        return _run(target, ns)

    return run_cli(go, argv)


__all__ = ["ActgenError", "main"]
