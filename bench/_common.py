"""Shared helpers of the bench/ scripts: imports from the repository root, a JSON
result cache in bench/.cache/, compiling a kernel into a plain record, and tables.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import statistics
from collections import Counter
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/x.py` puts bench/ first, not the repository root
    sys.path.insert(0, str(ROOT))

CACHE_DIR = Path(__file__).resolve().parent / ".cache"
KERNELS = ROOT / "examples" / "kernels"

GEMMINI_EVAL = ["gemmini_mac", "gemmini_gemm", "gemmini_add", "gemmini_abc", "gemmini_add3",
                "gemmini_ab_plus_ac", "gemmini_ab_plus_c_plus_d", "gemmini_abc_plus_d",
                "gemmini_abc_plus_a", "gemmini_abcd", "gemmini_abca", "gemmini_add4"]

try:
    from rich.console import Console
    from rich.table import Table
    HAVE_RICH = True
except ImportError:  # pragma: no cover - plain text fallback
    HAVE_RICH = False


def backend(target: str):
    """The generated package of a target (generated.<target>)."""
    return importlib.import_module(f"generated.{target}")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


class Cache:
    """JSON records keyed by (kind, target, kernel text hash, options)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled

    def _path(self, kind: str, target: str, text: str, extra: str) -> Path:
        key = text_hash(text + "\0" + extra)
        return CACHE_DIR / f"{kind}-{target}-{key}.json"

    def get(self, kind: str, target: str, text: str, extra: str = "") -> dict | None:
        p = self._path(kind, target, text, extra)
        if not self.enabled or not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError):
            return None

    def put(self, kind: str, target: str, text: str, record: dict, extra: str = "") -> None:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)  # written even with --no-cache: a fresh result
        self._path(kind, target, text, extra).write_text(json.dumps(record, indent=1))


def provenance() -> str:
    """The commit (with '+' when the tree has changes) and the machine a figure comes from."""
    import os
    import subprocess

    def git(*a: str) -> str:
        r = subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""

    commit = (git("rev-parse", "--short", "HEAD") or "unknown commit") + ("+" if git("status", "--porcelain") else "")
    cpu = "unknown CPU"
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"commit {commit}, {cpu}, {os.cpu_count()} cores"


def one_line(msg: str, n: int = 80) -> str:
    line = " ".join(str(msg).split())
    return line if len(line) <= n else line[: n - 1] + "…"


def hbm_bytes(bytes_moved: dict, hbm: str) -> int:
    """Bytes on every (src, dst) pair with HBM at one end."""
    return sum(b for (src, dst), b in bytes_moved.items() if hbm in (src, dst) and src != dst)


def compile_record(target: str, text: str, *, timeout: float, do_verify: bool = False,
                   do_roofline: bool = False) -> dict:
    """Compile HLO text for a target and measure it; never raises for a kernel the target
    cannot run (``ok`` False and ``error`` set instead)."""
    from runtime_skeleton.compile import CompileError
    from runtime_skeleton.hlo import parse_module
    from runtime_skeleton.sim.timing import time_program

    be = backend(target)
    rec: dict = {"target": target, "ok": False, "timeout": timeout}
    t0 = time.perf_counter()
    try:
        res = be.compile_hlo(text, timeout=timeout, deterministic=True)
    except CompileError as e:
        rec.update(error=getattr(e, "message", None) or str(e), wall=time.perf_counter() - t0)
        return rec
    except Exception as e:  # a crash elsewhere: report it, keep the table going
        rec.update(error=f"{type(e).__name__}: {e}", crashed=True, wall=time.perf_counter() - t0)
        return rec
    rec["wall"] = time.perf_counter() - t0
    st = res.stats
    rec.update(ok=True, cost=res.cost, instructions=res.program.executed(),
               program=res.describe_loops() or "straight-line",
               stats={"seconds": st.seconds, "phase1": st.phase1_seconds, "phase2": st.phase2_seconds,
                      "emit": st.emit_seconds, "pii_graphs": st.pii_graphs, "candidates": st.candidates,
                      "saturation": st.saturation_seconds, "extraction": st.extraction_seconds,
                      "ordering": st.ordering_seconds, "allocation": st.allocation_seconds})
    t = time_program(be.TARGET, res.program)
    rec.update(cycles=t.cycles, busy=dict(t.busy), hbm_bytes=hbm_bytes(t.bytes_moved, be.TARGET.hbm.name),
               bytes_moved={f"{s}->{d}": b for (s, d), b in t.bytes_moved.items()})
    if do_roofline:
        from runtime_skeleton.sim.roofline import roofline
        r = roofline(be.TARGET, res.program, kernel=parse_module(text))
        rec.update(t_peak=r.t_peak, roofline_reason=r.reason,
                   roofline_term=r.bound() if r.t_peak is not None else None)
    if do_verify:
        try:
            problems = be.verify(res)
        except Exception as e:
            problems = [f"verify crashed: {type(e).__name__}: {e}"]
        rec["verify_problems"] = list(problems)
    return rec


def median(xs):
    return statistics.median(xs) if xs else None


def print_table(title: str, columns: list[str], rows: list[list], right: set[int] | None = None) -> None:
    right = right if right is not None else set(range(1, len(columns)))
    cells = [["" if c is None else str(c) for c in r] for r in rows]
    if HAVE_RICH:
        tab = Table(title=title)
        for i, c in enumerate(columns):
            tab.add_column(c, justify="right" if i in right else "left", no_wrap=i < len(columns) - 1)
        for r in cells:
            tab.add_row(*r)
        Console(width=max(220, Console().width)).print(tab)
        return
    widths = [max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)]

    def fmt(r):
        return "  ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths)))
    print(title)
    print(fmt(columns))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print(fmt(r))


def markdown_table(columns: list[str], rows: list[list]) -> str:
    """A table as docs/performance.md holds them."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join("" if c is None else str(c) for c in r) + " |" for r in rows])


def write_section(script: str, title: str, body: str) -> None:
    """Replace (or append) the section of docs/performance.md between ``script``'s markers
    (``<!-- bench/x.py -->`` ... ``<!-- end bench/x.py -->``)."""
    doc = ROOT / "docs" / "performance.md"
    start, end = f"<!-- {script} -->", f"<!-- end {script} -->"
    text = doc.read_text()
    block = f"{start}\n## {title}\n\n{body}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)


def profile_row(target: str, texts: list[str]) -> list:
    """The draw of one target: each operator with the number of nodes using it, the element
    types and shapes of the values, and the node counts (entry instructions, calls inlined)."""
    from runtime_skeleton.hlo import parse_module
    from runtime_skeleton.ir.inline import inline_calls
    from runtime_skeleton.ir.types import TensorType

    ops: Counter = Counter()
    dtypes: Counter = Counter()
    shapes: Counter = Counter()
    nodes = []
    for text in texts:
        comp = inline_calls(parse_module(text, "<kernel>")).entry_computation
        nodes.append(len(comp.instructions))
        ops.update({i.opcode for i in comp.instructions if i.opcode not in ("parameter", "constant")})
        for i in comp.instructions:
            if isinstance(i.type, TensorType) and i.type.rank:
                dtypes[i.type.dtype.name] += 1
                shapes["x".join(map(str, i.type.shape))] += 1
    top = lambda c, n: ", ".join(f"{k} {v}" for k, v in c.most_common(n))  # noqa: E731
    nodes.sort()
    return [target, top(ops, 20), top(dtypes, 4), top(shapes, 6),
            f"{nodes[0]}/{nodes[len(nodes) // 2]}/{nodes[-1]}" if nodes else ""]


PROFILE_COLUMNS = ["target", "operators", "types", "shapes", "nodes min/median/max"]


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def percentile(xs: list[float], q: float) -> float:
    """The q-quantile of xs (the element at that rank; nan for none)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def campaign_args(description: str, n: int, jobs: int, write: bool = False) -> argparse.Namespace:
    """The options of a per-target campaign of random kernels: --targets, --n, --seed, --jobs,
    --timeout (the fuzzer's default budget, 10 s); with ``write``, --write (the tables into
    docs/performance.md)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--targets", nargs="+", default=["gemmini", "amx"])
    ap.add_argument("--n", type=int, default=n)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=jobs)
    ap.add_argument("--timeout", type=float, default=10.0, help="compile time limit per kernel (s)")
    if write:
        ap.add_argument("--write", action="store_true", help="write the tables into docs/performance.md")
    return ap.parse_args()
