"""Which fuzzing operators a backend compiles, per element type: one probe kernel each.

A target's dtypes say what its instructions compute with, not which operators they
compute in each: Gemmini's array multiplies s8 into s32 and its accumulator adds
s32, but nothing negates s8 with wrap-around (its outputs saturate) or takes the
minimum of two s32 tensors. Kernels drawn from every operator in every dtype are
then almost all refused, and fuzzing tests little but the refusals.

So the fuzzer can first ask the backend: for each of the ten operators and each of
the profile's dtypes, a kernel of that one operator on one tile (``probe_kernel``)
is compiled (straight-line, within a small e-graph: ``PROBE_NODES``); the pairs that
compile are what the generator draws from (``Profile.ops``). Results are cached on
disk per target and compiler source, so probing happens once. A probe that compiles is kept whether or
not its program verifies: a wrong program is then found and reported by the fuzz
run itself. Kernels combining capable operators can still be refused (a
composition phase 1 does not find in time); those count as unsupported, as before.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import pathlib
from collections.abc import Iterator

from ..cache import cache_root
from ..executor import map_jobs
from ..target import TargetDef
from .gen import OPS, _type
from .jobs import for_workers, is_refusal
from .profile import Profile, profile, resolve_target

# A probe is one row: a target that computes the operator does so with a small e-graph
# (AMX's sum of 16 floats, one element at a time, at 3.8k e-nodes). The node bound, not the
# clock, ends a refusal (3-15 s), so the answer does not depend on the machine's speed; the
# timeout is a backstop.
PROBE_NODES = 10000
PROBE_TIMEOUT = 10.0  # seconds per probe kernel at most


def probe_kernel(prof: Profile, op: str, dtype: str) -> str:
    """HLO of one ``op`` on one row of ``dtype`` (for dot: operands of ``dtype``, the
    result its accumulator type): shapes of 1 x d, d the profile's smallest extent
    (small, so that a probe that compiles does so quickly)."""
    d = prof.dims[0]
    t, vec, one = _type(dtype, (1, d)), _type(dtype, (d,)), _type(dtype, (1,))
    params = [t]
    head: list[str] = []
    if op == "negate":
        body = [f"ROOT r = {t} negate(a)"]
    elif op == "reverse":
        body = [f"ROOT r = {t} reverse(a), dimensions={{1}}"]
    elif op in ("add", "subtract", "minimum", "maximum"):
        params = [t, t]
        body = [f"ROOT r = {t} {op}(a, b)"]
    elif op == "clamp":
        lo, hi = ("-1", "1") if dtype.startswith(("f", "bf")) else (("1", "9") if dtype.startswith("u") else ("-9", "9"))
        body = [f"lo = {dtype}[] constant({lo})", f"hi = {dtype}[] constant({hi})", f"ROOT r = {t} clamp(lo, a, hi)"]
    elif op == "broadcast":
        params, t = [vec], _type(dtype, (2, d))  # a row repeated
        body = [f"ROOT r = {t} broadcast(a), dimensions={{1}}"]
    elif op == "reduce":
        head = [f"add_{dtype} {{", f"  x = {dtype}[] parameter(0)", f"  y = {dtype}[] parameter(1)",
                f"  ROOT s = {dtype}[] add(x, y)", "}", ""]
        body = [f"zero = {dtype}[] constant(0)", f"ROOT r = {one} reduce(a, zero), dimensions={{1}}, to_apply=add_{dtype}"]
        t = one
    elif op == "dot":
        params = [t, _type(dtype, (d, d))]
        t = _type(prof.acc(dtype), (1, d))
        body = [f"ROOT r = {t} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"]
    else:
        raise ValueError(f"no probe for operator {op}")
    names = "ab"
    lines = [f"HloModule probe_{op}_{dtype}, entry_computation_layout={{({', '.join(params)})->{t}}}", ""]
    lines += head + ["ENTRY main {"]
    lines += [f"  {names[i]} = {p} parameter({i})" for i, p in enumerate(params)]
    lines += [f"  {line}" for line in body] + ["}"]
    return "\n".join(lines) + "\n"


def probes(prof: Profile, ops: tuple[str, ...] = OPS) -> Iterator[tuple[str, str, str]]:
    """(operator, dtype, kernel text) for every operator and dtype of the profile."""
    for op in ops:
        for dtype in prof.dtypes:
            yield op, dtype, probe_kernel(prof, op, dtype)


def _compiles(job: tuple) -> bool:
    from ..compile import CompileOptions, compile_hlo
    from ..isel.phase1 import Limits

    target, text, timeout = job
    limits = Limits(max_nodes=PROBE_NODES, timeout=timeout)
    try:
        compile_hlo(resolve_target(target), text,
                    CompileOptions(timeout=timeout, deterministic=True, tiling=False, phase1=limits))
        return True
    except Exception as err:  # noqa: BLE001 - a refusal is "no"; a crash is drawn, so the fuzz run reports it
        return not is_refusal(err)


def capable(target: TargetDef | str, ops: tuple[str, ...] = OPS, timeout: float = PROBE_TIMEOUT,
            jobs: int = 1, say=None) -> Profile:  # noqa: ANN001
    """The target's profile restricted to the (operator, dtype) pairs whose probe
    compiles within ``timeout``. Results are cached on disk (``cache_file``) per
    target description, compiler source and timeout; ``say`` gets a progress line
    when probes run."""
    t = resolve_target(target)
    prof = profile(t)
    path = cache_file(t, timeout)
    known = _load(path)
    todo = [(op, dt, text) for op, dt, text in probes(prof, ops) if f"{op} {dt}" not in known]
    if todo:
        if say:
            say(f"probing which of the operators compile, per dtype: {len(todo)} one-operator kernels "
                f"(a few seconds each; {'cached in ' + str(path.parent) if path else 'not cached'})")
        carried, workers = for_workers(t, jobs)
        ok = map_jobs(_compiles, [(carried, text, timeout) for _, _, text in todo], workers)
        known.update({f"{op} {dt}": bool(yes) for (op, dt, _), yes in zip(todo, ok)})
        _store(path, known)
    pairs = frozenset((op, dt) for op in ops for dt in prof.dtypes if known.get(f"{op} {dt}"))
    return dataclasses.replace(prof, ops=pairs)


def cache_file(t: TargetDef, timeout: float) -> pathlib.Path | None:
    """Where the probes' results are kept (``cache.cache_root``), named by a hash of the generated target, the compiler's
    source and the timeout (None: a target not loaded from a file, not cached)."""
    try:
        generated = pathlib.Path(inspect.getsourcefile(next(iter(t.instructions.values()))))
    except (TypeError, OSError, StopIteration):
        return None
    h = hashlib.sha256(f"{t.name} {timeout!r} {PROBE_NODES} {OPS}".encode())
    h.update(generated.read_bytes())
    for f in sorted(pathlib.Path(__file__).resolve().parents[1].rglob("*.py")):
        h.update(f.read_bytes())
    return cache_root() / f"capability-{t.name}-{h.hexdigest()[:16]}.json"


def _load(path: pathlib.Path | None) -> dict[str, bool]:
    try:
        data = json.loads(path.read_text()) if path else {}
        return {k: bool(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _store(path: pathlib.Path | None, known: dict[str, bool]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(sorted(known.items())), indent=1))
        tmp.replace(path)
    except OSError:  # a read-only home: probe again next time
        pass


def describe(prof: Profile) -> str:
    """'add s32, dot s8, ...' (every pair when the profile is not restricted)."""
    if prof.ops is None:
        return "every operator in every dtype"
    return ", ".join(f"{op} {dt}" for op, dt in sorted(prof.ops)) or "nothing"
