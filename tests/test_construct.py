"""Phase 2's constructive allocator (alloc/construct.py) and the allocation verifier
(alloc/check.py): first-fit allocations are valid and run; the verifier accepts what
CP-SAT finds and rejects what breaks a constraint family."""
import dataclasses
import importlib
import pathlib
import sys

import pytest

from runtime_skeleton.alloc import allocate
from runtime_skeleton.alloc.allocate import SolveOptions
from runtime_skeleton.alloc.check import violations
from runtime_skeleton.alloc.construct import construct
from runtime_skeleton.alloc.liveness import live_ranges
from runtime_skeleton.alloc.order import heuristic_order
from runtime_skeleton.emit import emit_program
from runtime_skeleton.hlo import parse_file, parse_module
from runtime_skeleton.isel.phase1 import InstructionSelector
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.compare import compare_outputs
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import run_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from large_kernels import vector_dag  # noqa: E402

CASES = [("gemmini", "gemmini_gemm"), ("gemmini", "gemmini_abc_plus_d"), ("gemmini", "gemmini_add"),
         ("amx", "amx_k1"), ("amx", "amx_k2"), ("amx", "elementwise_chain_f32")]


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


def _ranges(g, order):
    return {o: r for o, r in live_ranges(g, order).items() if g.nodes[o].kind != "undef"}


def _graph(tname, module):
    sel = InstructionSelector(target(tname), module)
    return sel, sel.first()


@pytest.fixture(scope="module", params=CASES + [("amx", "vector_dag_60")], ids=lambda c: c[1])
def case(request):
    tname, kernel = request.param
    module = parse_module(vector_dag(60, seed=3)) if kernel.startswith("vector_dag") else \
        parse_file(ROOT / f"examples/kernels/{kernel}.hlo")
    sel, g = _graph(tname, module)
    return target(tname), sel, g


def test_first_fit_allocations_are_valid_and_compute_the_kernel(case):
    t, sel, g = case
    order = heuristic_order(g, t)
    a = construct(t, g, order, _ranges(g, order))
    assert a is not None and a.solver == "first-fit"
    assert violations(t, g, _ranges(g, order), a) == []
    prog = emit_program(t.name, g, a, sel.input_types, sel.output_types)
    x = random_inputs(sel.input_types, 5)
    assert compare_outputs(run_program(t, prog, x), evaluate(sel.module, x)) == []


def test_the_verifier_accepts_what_cp_sat_finds(case):
    """The verifier states the CP-SAT model's constraints, no more: its solutions pass."""
    t, _, g = case
    order = heuristic_order(g, t)
    a = allocate(t, g, order, SolveOptions(first_fit=False))
    assert a.solver == "cp-sat"
    assert violations(t, g, _ranges(g, order), a) == []


def test_the_verifier_names_each_broken_family():
    t = target("gemmini")
    sel, g = _graph("gemmini", parse_file(ROOT / "examples/kernels/gemmini_gemm.hlo"))
    order = heuristic_order(g, t)
    ranges = _ranges(g, order)
    a = construct(t, g, order, ranges)
    loads = [v for v in order if g.nodes[v].op == "mvin"]
    assert len(loads) == 2

    def broken(**changes):
        return violations(t, g, ranges, dataclasses.replace(a, **changes))

    # both operands of the matmul on the same scratchpad rows while both are live
    starts = {**a.starts, loads[1]: a.starts[loads[0]]}
    attrs = {**a.attrs, loads[1]: {**a.attrs[loads[1]], "sp_addr": a.attrs[loads[0]]["sp_addr"]}}
    assert {f for f, _ in broken(starts=starts, attrs=attrs)} >= {"CSP4", "CSP2"}
    # a β that no longer says where the output is
    attrs = {**a.attrs, loads[0]: {**a.attrs[loads[0]], "sp_addr": a.attrs[loads[0]]["sp_addr"] + 1}}
    assert ("CSP1", f"%{loads[0]} mvin @sp") in broken(attrs=attrs)
    # an input region that is not where the program reads it
    assert any(f == "CSP3" for f, _ in broken(inputs=[x + 64 for x in a.inputs]))
    # out of the buffer
    assert broken(starts={**a.starts, loads[0]: (t.buffers["sp"].access_shape[0],)})[0][0] == "CSP4"


def test_a_constraint_first_fit_ignores_is_left_to_cp_sat():
    """A validity constraint over β (here: the load's rows at 0) is not one of the
    equalities first fit places by; the verifier rejects its placement and CP-SAT decides."""
    t = target("gemmini")
    _, g = _graph("gemmini", parse_file(ROOT / "examples/kernels/gemmini_gemm.hlo"))
    base = t.instructions["mvin"]

    class Offset(base):
        @staticmethod
        def e(a, x=None):
            from runtime_skeleton.symbolic import PY

            x = x or PY
            return x.and_(base.e(a, x), x.mod(a["sp_addr"], 32) == 16)

    pinned = dataclasses.replace(t, instructions={**t.instructions, "mvin": Offset})
    order = heuristic_order(g, pinned)
    assert construct(pinned, g, order, _ranges(g, order)) is None
    a = allocate(pinned, g, order, SolveOptions())
    assert a.solver == "cp-sat"
    assert all(a.attrs[v]["sp_addr"] % 32 == 16 for v in order if g.nodes[v].op == "mvin")


def test_first_fit_prefers_a_place_never_used_to_the_one_just_freed():
    """Reusing the register the last value freed makes the next write wait for its reader
    (write-after-read); among free registers the longest-free one is taken (an
    instruction may still write over an operand it reads, in place or not)."""
    t = target("amx")
    _, g = _graph("amx", parse_module(vector_dag(40, seed=1)))
    order = heuristic_order(g, t)
    ranges = _ranges(g, order)
    a = construct(t, g, order, ranges)
    zmm = [v for v in order if g.nodes[v].buffer == "zmm" and v in ranges]
    pos = {v: p for p, v in enumerate(order, start=1)}
    for v in zmm:  # no result lands where a value died the step before it is written (but in place)
        died_just_before = [u for u in zmm if u not in (v, *g.nodes[v].args) and ranges[u].end == pos[v] - 1]
        assert all(a.starts[u] != a.starts[v] for u in died_just_before)


def test_a_kernel_first_fit_allocates_compiles_without_importing_ortools():
    """CP-SAT (and ortools with pandas beneath it, about 0.3 s) is loaded only for an
    allocation first fit does not find."""
    import subprocess

    code = ("import sys, generated.gemmini as g\n"
            "g.compile_hlo(open('examples/kernels/gemmini_gemm.hlo').read(), deterministic=True)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ortools', 'pandas')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
