"""The import graph of the generic core has no cycle, function-local imports included:
each module can be read, tested and replaced knowing only what it imports."""
from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "runtime_skeleton"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports anywhere in its text."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        package = m if f.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                named = ".".join(base + ([node.module] if node.module else []))
                names = [named] + [f"{named}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            graph[m] |= {n for n in names if n in mods and n != m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    return found


def test_the_core_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_graph_holds_local_imports_and_a_cycle_is_found():
    graph = import_graph()
    assert "runtime_skeleton.superopt.driver" in graph["runtime_skeleton.compile"]  # inside compile_module
    assert "runtime_skeleton.superopt.tiled" in graph["runtime_skeleton.superopt.driver"]
    graph["runtime_skeleton.direct"].add("runtime_skeleton.superopt.driver")  # as compile.py's types once did
    assert any("runtime_skeleton.direct" in c and "runtime_skeleton.superopt.tiled" in c for c in cycles(graph))


def test_help_loads_no_solver_and_no_ml_dtypes():
    """``python -m generated.<t> --help`` starts fast: the solvers (egglog, ortools, z3) and
    ml_dtypes (most of a second to import: only bf16 needs it) are loaded where used."""
    import subprocess
    import sys

    code = ("import runpy, sys\n"
            "sys.argv = ['gemmini', '--help']\n"
            "try:\n    runpy.run_module('generated.gemmini', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'egglog', 'ortools', 'z3', 'ml_dtypes'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_bf16_still_converts_from_numpy_once_ml_dtypes_is_loaded():
    import ml_dtypes
    import numpy as np

    from runtime_skeleton.ir.dtypes import bf16, from_numpy

    assert from_numpy(np.dtype(ml_dtypes.bfloat16)) is bf16 and bf16.np == np.dtype(ml_dtypes.bfloat16)
