"""Random kernels exported by JAX (issue 37's unseen kernels): JAX functions of Act's ten
fuzzing operators (add, subtract, negate, maximum, minimum, clamp, broadcast, reduce sum,
reverse, dot), drawn from a seed, lowered with ``jax.jit(f).lower(...).as_text(dialect="hlo")``
and compiled by the backend at the fuzzer's default budget (10 s, deterministic), each
program verified on the simulator against the reference interpreter (``fuzz.check_kernel``).
The draw's profile is printed with the figures: the operators of the kernels as JAX lowered
them (calls inlined), their element types and shapes, and their node counts.

The draw is not the fuzzer's (a different generator, through JAX's own lowering): on
gemmini int8 inputs with int32 values (a dot reads operands clipped and requantized to
int8, as the issue's kernels do), on amx f32; dimensions 16 or 32. Prints, per target, how
many compiled, were refused at once (< 1 s) or failed, compile time p50/p95, and each
kernel that did not compile with its reason.

    python bench/jax_fuzz.py [--targets gemmini amx] [--n 20] [--seed 0] [--jobs 2] [--timeout 10]
"""
from __future__ import annotations

import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor

from _common import PROFILE_COLUMNS, campaign_args, percentile, print_table, profile_row, progress, provenance

from runtime_skeleton.fuzz.run import VERIFIED, check_kernel

DIMS = (16, 32)


def _draw(rng: random.Random, target: str, lo: int = 3, hi: int = 14):  # noqa: ANN202
    """A random JAX function over a few 2-D inputs and its argument specs. Values are 2-D
    [m, n] (dims 16 or 32); each step applies one of the ten operators to values drawn from
    the pool (or a new input), and the last value is the result."""
    import jax.numpy as jnp
    from jax import ShapeDtypeStruct

    value = jnp.int32 if target == "gemmini" else jnp.float32
    arg_dtype = jnp.int8 if target == "gemmini" else jnp.float32
    specs: list = []
    steps: list = []  # (op, operand indices into the pool, extra)
    shapes: list[tuple[int, int]] = []

    def new_input(shape: tuple[int, int]) -> int:
        specs.append(ShapeDtypeStruct(shape, arg_dtype))
        steps.append(("input", (len(specs) - 1,), None))
        shapes.append(shape)
        return len(shapes) - 1

    def pick(shape: tuple[int, int] | None = None) -> int:
        same = [i for i, s in enumerate(shapes) if shape is None or s == shape]
        if same and rng.random() < 0.7:
            return rng.choice(same)
        return new_input(shape or (rng.choice(DIMS), rng.choice(DIMS)))

    pick()
    for _ in range(rng.randint(lo, hi)):
        op = rng.choice(["add", "subtract", "negate", "maximum", "minimum", "clamp", "broadcast", "reduce",
                         "reverse", "dot"])
        a = rng.randrange(len(shapes)) if rng.random() < 0.25 else len(shapes) - 1
        m, n = shapes[a]
        if op in ("add", "subtract", "maximum", "minimum"):
            steps.append((op, (a, pick((m, n))), None))
            shapes.append((m, n))
        elif op in ("negate", "reverse"):
            steps.append((op, (a,), rng.choice([0, 1, (0, 1)])))
            shapes.append((m, n))
        elif op == "clamp":
            lo_, hi_ = sorted(rng.sample(range(-8, 9), 2))
            steps.append((op, (a,), (lo_, hi_)))
            shapes.append((m, n))
        elif op == "reduce":  # a sum along one axis, broadcast back (an [m, 1] or [1, n] result stays 2-D)
            axis = rng.choice([0, 1])
            steps.append((op, (a,), axis))
            shapes.append((m, n))
        elif op == "broadcast":  # a row of a value, repeated
            steps.append((op, (a,), None))
            shapes.append((m, n))
        else:  # dot: [m, k] . [k, p]
            p = rng.choice(DIMS)
            b = pick((n, p))
            steps.append((op, (a, b), None))
            shapes.append((m, p))

    def fn(*args):  # noqa: ANN002, ANN202
        vals: list = []
        for op, xs, extra in steps:
            v = [vals[x] for x in xs] if op != "input" else None
            if op == "input":
                r = args[xs[0]].astype(value)
            elif op in ("add", "subtract", "maximum", "minimum"):
                r = getattr(jnp, op)(v[0], v[1])
            elif op == "negate":
                r = -v[0]
            elif op == "reverse":
                r = jnp.flip(v[0], axis=extra)
            elif op == "clamp":
                r = jnp.clip(v[0], value(extra[0]), value(extra[1]))
            elif op == "reduce":
                r = jnp.broadcast_to(jnp.sum(v[0], axis=extra, keepdims=True), v[0].shape)
            elif op == "broadcast":
                r = jnp.broadcast_to(v[0][:1, :], v[0].shape)
            elif target == "gemmini":  # operands requantized to int8, an int32 product
                q = [jnp.clip(x, -128, 127).astype(jnp.int8) for x in v]
                r = jnp.dot(q[0], q[1], preferred_element_type=jnp.int32)
            else:
                r = jnp.dot(v[0], v[1])
            vals.append(r)
        return vals[-1]

    return fn, specs


def kernel_text(target: str, seed: int) -> str:
    """The HLO text JAX prints for the kernel drawn from ``seed``."""
    import jax

    fn, specs = _draw(random.Random(f"{target}:{seed}"), target)
    return jax.jit(fn).lower(*specs).as_text(dialect="hlo")


def _job(job: tuple) -> tuple[int, str, object]:
    target, seed, timeout = job
    text = kernel_text(target, seed)
    return seed, text, check_kernel(target, text, seed, timeout, text.count(" = "))


def main() -> None:
    args = campaign_args(__doc__.splitlines()[0], n=20, jobs=2)
    print(provenance())
    rows, misses, profiles = [], [], []
    for t in args.targets:
        progress(f"{t}: {args.n} random JAX kernels")
        work = [(t, s, args.timeout) for s in range(args.seed, args.seed + args.n)]
        # spawned, not forked: a forked worker can hang in jax's first use
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            got = sorted(pool.map(_job, work), key=lambda x: x[0])
        outs = [o for _, _, o in got]
        profiles.append(profile_row(t, [text for _, text, _ in got]))
        ok = [o for o in outs if o.status == VERIFIED]
        refused = [o for o in outs if not o.compiled and o.status != "failed" and o.seconds < 1.0]
        wrong = [o for o in outs if o.status == "failed"]
        times = [o.seconds for o in ok]
        rows.append([t, len(outs), len(ok), len(refused), len(outs) - len(ok) - len(refused) - len(wrong), len(wrong),
                     f"{percentile(times, 0.5):.2f}", f"{percentile(times, 0.95):.2f}",
                     f"{min(o.nodes for o in outs)}-{max(o.nodes for o in outs)}"])
        misses += [[t, o.seed, o.nodes, f"{o.seconds:.1f}", (o.message or "")[:110]] for o in outs if o.status != VERIFIED]
    print_table("Random JAX kernels: verified, refused at once, not compiled, wrong",
                ["target", "kernels", "verified", "refused < 1 s", "not compiled", "wrong", "compile p50 s",
                 "compile p95 s", "HLO lines"], rows)
    print_table("The draw: operators (kernels using each), element types and shapes (values), nodes",
                PROFILE_COLUMNS, profiles, right={4})
    if misses:
        print_table("Kernels not compiled", ["target", "seed", "HLO lines", "s", "why"], misses)


if __name__ == "__main__":
    main()
