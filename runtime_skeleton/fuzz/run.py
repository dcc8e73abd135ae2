"""Fuzz a backend with random kernels (Act §9.4): compile each, verify each program.

Every kernel ends in one of three states:

* verified: compiled, and the simulator matches the reference interpreter;
* unsupported: the compiler refused it with a reason (CompileError and the other
  reasoned refusals: no pii graph, no allocation, the time limit), bucketed into a
  short category by the message's leading words ("no pii graph: add in acc",
  "allocation: CSP4 acc", "timeout", ...); a refusal that came when the time limit
  was used up is "timeout (no pii graph)" etc., since more time might have found a
  program (phase 1 explains what is missing in the e-graph so far);
* failed: a bug — the program computes something else (mismatch), the simulator
  rejects the emitted program, the generated kernel does not parse, or any other
  exception. Each failing kernel is written to ``<out_dir>/fuzz_<seed>.hlo`` with a
  comment header naming the seed, the target and the error.
"""
from __future__ import annotations

import contextlib
import pathlib
import re
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import ActgenError, EvalError, HloError
from ..executor import map_jobs
from ..target import TargetDef
from .gen import chosen_ops, random_fuzz_kernel
from .jobs import for_workers, is_refusal
from .profile import resolve_target

VERIFIED, UNSUPPORTED, FAILED = "verified", "unsupported", "failed"


class HardTimeout(Exception):
    """The compilation ran far past its own time limit (stopped by the fuzzer)."""


@dataclass
class Outcome:
    seed: int
    status: str  # VERIFIED, UNSUPPORTED or FAILED
    category: str  # "" when verified
    message: str = ""
    compiled: bool = False
    seconds: float = 0.0  # compile time
    nodes: int = 0
    instructions: int = 0  # of the program, when compiled
    saved: str = ""  # path of the saved kernel, for failures
    at_limit: bool = False  # the compilation used up its time limit
    reason: str = ""  # for a refusal at the time limit: the category its message alone gives
    cycles: float = 0.0  # the compiled program's cost, when compiled
    random_cycles: float = 0.0  # fuzz --from-programs: the cost of the random program the kernel came from


@dataclass
class FuzzReport:
    target: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    drawn: str = ""  # the (operator, dtype) pairs drawn from, when probed

    @property
    def n(self) -> int:
        return len(self.outcomes)

    def _count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def compiled(self) -> int:
        return sum(o.compiled for o in self.outcomes)

    @property
    def verified(self) -> int:
        return self._count(VERIFIED)

    @property
    def unsupported(self) -> int:
        return self._count(UNSUPPORTED)

    @property
    def failed(self) -> int:
        return self._count(FAILED)

    def categories(self, status: str = UNSUPPORTED) -> Counter:
        return Counter(o.category for o in self.outcomes if o.status == status)

    def summary(self) -> str:
        return (f"fuzz: {self.n} kernels, {self.compiled} compiled, {self.verified} verified, "
                f"{self.unsupported} unsupported, {self.failed} failed")


# ---------------------------------------------------------------- classification

_OPS_IN = re.compile(r"no instruction produces \S+ in (HBM|buffer \w+) computed by ([\w\-, ]+?)(?: \(|$)", re.M)
# phase 1 says when it gave up at its time limit (more time might have found a pii graph)
_STOPPED = re.compile(r"stopped at its [\d.e+-]+ ?s limit")


def _family(text: str) -> str:
    """The constraint family and buffer of an allocation failure, without node numbers."""
    text = text.strip()
    if m := re.match(r"CSP4: buffer (\w+) overflows", text):
        return f"CSP4 {m.group(1)}"
    if m := re.match(r"no allocation: (CSP\d)(?: (\w+))?", text):
        what = m.group(2) or ""
        return f"{m.group(1)} {what}".strip() if not what.isdigit() else m.group(1)
    if m := re.search(r"does not fit in buffer (\w+)", text):
        return f"fit {m.group(1)}"
    if text.startswith("CP-SAT found no allocation within"):
        return "solver timeout"
    return _leading(text)


def _leading(message: str, words: int = 4) -> str:
    """The first few words, numbers and %names blanked, so similar messages share a bucket."""
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    first = re.sub(r"%\d+", "%N", first)
    first = re.sub(r"\b\d+(\.\d+)?s?\b", "N", first)
    return " ".join(first.split()[:words]).rstrip(":;,")


def categorize(message: str) -> str:
    """A short, stable bucket for the reason a kernel was refused."""
    text = message.strip()
    if m := re.match(r"no pii graph for \w+: (.*)", text, re.S):
        rest = m.group(1)
        if o := _OPS_IN.search(rest):
            ops = [x.strip() for x in o.group(2).split(",") if x.strip()]
            return f"no pii graph: {'/'.join(ops[:3])} in {o.group(1).replace('buffer ', '')}"
        if "cyclic or exceeds the node bound" in rest:
            return "no pii graph: node bound"
        return "no pii graph: " + _leading(rest, 3)
    if re.match(r"no pii graph of the \d+ found could be allocated", text):
        last = [ln for ln in text.splitlines()[1:] if ln.strip()]
        if last:
            failure = re.sub(r"^\s*pii graph \d+ \([^)]*\): ", "", last[-1])
            return "allocation: " + _family(failure)
        return "allocation"
    if re.match(r"CSP\d: |no allocation: |CP-SAT found no allocation|%\d+ .* does not fit in buffer", text):
        return "allocation: " + _family(text)  # phase 2's AllocationFailed itself
    if re.search(r"\btime ?out\b|\btimed out\b|time limit|deadline", text, re.I):
        return "timeout"
    return _leading(text)


def classify(error: BaseException | None = None, problems: list[str] | None = None,
             stage: str = "compile") -> tuple[str, str]:
    """(status, category) of one kernel: ``error`` raised at ``stage`` ("compile" or
    "verify"), or ``problems`` from verify (empty or None with no error: verified)."""
    if error is not None:
        if isinstance(error, HardTimeout):
            return UNSUPPORTED, "timeout"
        if stage == "compile" and is_refusal(error):
            refusal = getattr(error, "refusal", None)  # counted by its fields where the compiler gave them
            return UNSUPPORTED, refusal.category if refusal is not None else categorize(getattr(error, "message",
                                                                                                   str(error)))
        if isinstance(error, HloError):
            return FAILED, "kernel rejected by the HLO parser"
        if isinstance(error, EvalError) and stage == "verify":
            return FAILED, "verify: reference interpreter error"
        where = "compile" if stage == "compile" else "verify"
        return FAILED, f"{where} crash: {type(error).__name__}"
    if problems:
        return FAILED, "mismatch"
    return VERIFIED, ""


# ---------------------------------------------------------------- running

@contextlib.contextmanager
def hard_limit(seconds: float) -> Iterator[None]:
    """Raise HardTimeout after ``seconds`` (SIGALRM: main thread on POSIX only, else no limit)."""
    if seconds <= 0 or not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _fire(signum, frame):  # noqa: ANN001, ANN202
        raise HardTimeout(f"compilation still running after {seconds:g}s")

    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_kernel(target: TargetDef | str, text: str, seed: int = 0, timeout: float = 10.0, nodes: int = 0,
                 tiles_first: bool | None = None) -> Outcome:
    """Compile and verify one kernel; never raises (but for KeyboardInterrupt)."""
    from ..compile import CompileOptions, compile_hlo, verify

    target = resolve_target(target)

    t0 = time.perf_counter()
    try:
        with hard_limit(3 * timeout + 30):
            res = compile_hlo(target, text, CompileOptions(timeout=timeout, deterministic=True, tiles_first=tiles_first))
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001 - every exception is an outcome
        seconds = time.perf_counter() - t0
        status, cat = classify(err, stage="compile")
        if isinstance(err, HardTimeout):  # where it was stuck
            msg = str(err) + "\n" + "".join(traceback.format_tb(err.__traceback__)[-4:])
        else:
            msg = str(err) if status == UNSUPPORTED or isinstance(err, ActgenError) else traceback.format_exc()
        at_limit, reason = seconds >= 0.95 * timeout or bool(_STOPPED.search(msg)), ""
        if status == UNSUPPORTED and at_limit and not cat.startswith("timeout"):
            # refused when the time was up: more time might have found a program
            cat, reason = f"timeout ({cat.split(':')[0]})", cat
        return Outcome(seed, status, cat, msg, False, seconds, nodes, at_limit=at_limit, reason=reason)
    seconds = time.perf_counter() - t0
    ninstr = res.program.executed()
    try:
        problems = verify(target, res)
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001
        status, cat = classify(err, stage="verify")
        msg = str(err) if isinstance(err, ActgenError) else traceback.format_exc()
        return Outcome(seed, status, cat, msg, True, seconds, nodes, ninstr)
    status, cat = classify(problems=problems)
    return Outcome(seed, status, cat, "\n".join(problems), True, seconds, nodes, ninstr,
                   at_limit=seconds >= 0.95 * timeout, cycles=res.cost)


def _how(max_nodes: int | None = None, ops=None, probe: bool = True) -> str:  # noqa: ANN001
    """The fuzz options that draw the same kernel again."""
    how = f" --max-nodes {max_nodes}" if max_nodes is not None else ""
    if ops is not None:
        how += " --ops " + (ops if isinstance(ops, str) else ",".join(ops))
    return how + ("" if probe else " --unfiltered")


def save_failure(out_dir: str | pathlib.Path, target: str, seed: int, text: str, outcome: Outcome,
                 how: str = "") -> pathlib.Path:
    """``how``: the fuzz options that draw it again (``_how``)."""
    path = pathlib.Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    path = path / f"fuzz_{seed}.hlo"
    head = [f"// fuzz failure: target {target}, seed {seed}, {outcome.category}",
            f"// reproduce: python -m generated.{target} fuzz --n 1 --seed {seed}{how}",
            f"//   or: python -m generated.{target} compile {path.name} -o /tmp/{path.stem}.s --verify --deterministic"]
    head += ["// " + ln for ln in outcome.message.strip().splitlines()[:40]]
    path.write_text("\n".join(head) + "\n\n" + text)
    return path


def _progress(log: Callable[[str], None] | None, quiet: bool):  # noqa: ANN202
    """One short line per kernel (to ``log``, default stdout)."""
    if quiet:
        return lambda line: None
    return log or (lambda line: print(line, flush=True))


def _draw_and_check(job: tuple) -> tuple[str, Outcome]:
    """One fuzz kernel: (its text, its outcome). A module-level function, for worker processes."""
    target, prof, s, max_nodes, min_nodes, ops, timeout, tiles_first = job
    k = random_fuzz_kernel(prof or resolve_target(target), s, max_nodes, min_nodes, ops)
    return k.text, check_kernel(target, k.text, s, timeout, k.nodes, tiles_first)


def _program_and_check(job: tuple) -> tuple[str, Outcome]:
    """One random program's kernel (``programs``): (its text, its outcome, with both costs)."""
    from ..sim.timing import time_program
    from .programs import random_program, self_check

    target, _, s, _, _, _, timeout, tiles_first = job
    t = resolve_target(target)
    rp = random_program(t, s)
    if rp is None:
        return "", Outcome(s, UNSUPPORTED, "no random program drawn", "no draw of this seed allocates")
    wrong = self_check(t, rp)
    if wrong:  # the simulator and the semantics disagree: a bug in the description's package or here
        return rp.hlo, Outcome(s, FAILED, "random program disagrees with its meaning", wrong)
    o = check_kernel(target, rp.hlo, s, timeout, len(rp.kernel.entry_computation.instructions), tiles_first)
    o.random_cycles = time_program(t, rp.program).cycles
    return rp.hlo, o


def fuzz(target: TargetDef | str, n: int = 20, seed: int = 0, max_nodes: int | None = None,
         timeout_per_kernel: float = 10.0, out_dir: str | pathlib.Path | None = "fuzz_failures",
         min_nodes: int | None = None, log: Callable[[str], None] | None = None,
         quiet: bool = False, ops=None, jobs: int = 1, probe: bool = False,
         tiles_first: bool | None = None, from_programs: bool = False, executor: str = "local",
         address: str | None = None) -> FuzzReport:  # noqa: ANN001
    """Fuzz ``n`` kernels drawn from seeds seed, seed+1, ...; print one line per kernel,
    the summary line and the unsupported categories; return the report (counts).
    ``jobs`` > 1 checks kernels in that many processes (the report is the same, in seed order).
    ``probe``: draw only the (operator, dtype) pairs whose one-operator kernel compiles
    (``capability``); else every operator in every dtype of the target. ``tiles_first``:
    ``CompileOptions.tiles_first`` (None: phase 1's default). ``from_programs``: the kernels are
    the meanings of random valid programs of the target (``programs``), and each compiled
    program's cost is compared with the random program's. ``executor``, ``address``: where
    the kernels are checked (``executor.map_jobs``: local processes, or Ray)."""
    t = resolve_target(target)
    say = _progress(log, quiet)
    report = FuzzReport(t.name)
    t0 = time.perf_counter()
    prof = None
    if probe and not from_programs:
        from .capability import capable, describe

        prof = capable(t, chosen_ops(ops), jobs=jobs, say=say)
        if not prof.ops:
            say("no operator compiles alone in any dtype: drawing every operator in every dtype")
            prof = None
        else:
            report.drawn = describe(prof)
            say(f"drawing from the operators that compile alone: {report.drawn}")
    carried, workers = for_workers(t, jobs if executor == "local" else max(jobs, 2))
    if executor != "local" and isinstance(carried, TargetDef):
        raise ActgenError(f"--executor {executor} carries the target by its package, and {t.name} was not imported "
                          "from one")
    work = [(carried, prof, seed + i, max_nodes, min_nodes, ops, timeout_per_kernel, tiles_first) for i in range(n)]
    check = _program_and_check if from_programs else _draw_and_check
    for i, (text, o) in enumerate(map_jobs(check, work, workers, executor, address)):
        s = seed + i
        if o.status == FAILED and out_dir is not None:
            how = " --from-programs" if from_programs else _how(max_nodes, ops, probe)
            o.saved = str(save_failure(out_dir, t.name, s, text, o, how))
        report.outcomes.append(o)
        detail = {VERIFIED: f"{o.instructions} instructions", UNSUPPORTED: o.category,
                  FAILED: f"{o.category}" + (f" -> {o.saved}" if o.saved else "")}[o.status]
        say(f"[{i + 1}/{n}] seed {s}: {o.nodes} nodes, {o.status} in {o.seconds:.2f}s ({detail})")
    report.seconds = time.perf_counter() - t0
    for line in report_lines(report):
        say(line)
    return report


def report_lines(report: FuzzReport) -> list[str]:
    lines = [report.summary()]
    if report.n:
        lines.append(f"  compiled share: {100 * report.compiled / report.n:.1f}% ({report.compiled} of {report.n}), "
                     f"verified {100 * report.verified / report.n:.1f}%")
        times = [o.seconds for o in report.outcomes]
        comp = [o.seconds for o in report.outcomes if o.compiled]
        lines.append(f"  time per kernel: mean {sum(times) / len(times):.2f}s, max {max(times):.2f}s"
                     + (f"; compiled ones mean {sum(comp) / len(comp):.2f}s" if comp else "")
                     + f"; total {report.seconds:.1f}s; {sum(o.at_limit for o in report.outcomes)} used up "
                       "the time limit")
    lines += _cost_lines(report)
    for status in (UNSUPPORTED, FAILED):
        for cat, c in report.categories(status).most_common():
            lines.append(f"  {status} {c:4d}  {cat}")
            reasons = Counter(o.reason for o in report.outcomes if o.category == cat and o.reason)
            for why, k in reasons.most_common():
                lines.append(f"  {'':{len(status)}} {k:4d}    the message: {why}")
    return lines


def _cost_lines(report: FuzzReport) -> list[str]:
    """fuzz --from-programs: how many compiled programs cost no more than their random
    program, and each that costs more, with both costs."""
    ran = [o for o in report.outcomes if o.random_cycles and o.status == VERIFIED]
    if not ran:
        return []
    worse = [o for o in ran if o.cycles > o.random_cycles]
    lines = [f"  cost no more than the random program: {len(ran) - len(worse)} of {len(ran)} verified "
             f"({100 * (len(ran) - len(worse)) / len(ran):.1f}%)"]
    lines += [f"    seed {o.seed}: {o.cycles:g} cycles, the random program {o.random_cycles:g}" for o in worse]
    return lines


__all__ = ["FAILED", "UNSUPPORTED", "VERIFIED", "FuzzReport", "HardTimeout", "Outcome", "categorize",
           "check_kernel", "classify", "fuzz", "hard_limit", "report_lines", "save_failure"]

