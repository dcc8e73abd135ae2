"""Where independent jobs run: in this process, in a pool of local worker processes (the
default for ``--jobs N``), or on a Ray cluster (``--executor ray``: a local Ray instance, or
the cluster at ``--address``). Whichever runs them, results come back in job order, so a
report is the same; each job is a module-level function of picklable arguments, and a
target travels as the module path of its generated package (``superopt.parallel``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

from .errors import ActgenError

EXECUTORS = ("local", "ray")
RAY_EXTRA = "pip install 'actgen[ray]'"


def map_jobs(fn: Callable, jobs: list[tuple], workers: int, executor: str = "local",
             address: str | None = None) -> Iterator:
    """``fn`` over ``jobs``, results in order: here (``workers`` <= 1, local), in ``workers``
    spawned processes (local; each compiles one kernel at a time, so per-kernel time limits
    mean the same as in one process), or as Ray tasks."""
    if executor == "ray":
        yield from _on_ray(fn, jobs, workers, address)
        return
    if executor != "local":
        raise ActgenError(f"unknown executor '{executor}' (choose from {', '.join(EXECUTORS)})")
    if workers <= 1:
        yield from map(fn, jobs)
        return
    import concurrent.futures
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # no fork of a process that holds egglog and CP-SAT threads
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        yield from pool.map(fn, jobs)


def _on_ray(fn: Callable, jobs: list[tuple], workers: int, address: str | None) -> Iterator:
    try:
        import ray
    except ImportError:
        raise ActgenError(f"--executor ray needs Ray: {RAY_EXTRA}") from None
    started = not ray.is_initialized()
    if started:  # a local instance of `workers` CPUs, or the cluster at `address`
        options = {"address": address} if address else {"num_cpus": max(1, workers)}
        try:
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, **options)
        except ConnectionError as err:
            raise ActgenError(f"cannot reach the Ray cluster at {address}: {err}") from None
    try:
        task = ray.remote(fn)
        refs = [task.remote(job) for job in jobs]
        for ref in refs:
            yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()
