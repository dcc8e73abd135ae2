"""Fuzz testing of generated backends (Act §9.4, App. D).

    random_kernel(target, seed, max_nodes=90) -> str      # HLO text, deterministic in seed
    kernels(target, max_nodes=90)                         # hypothesis strategy of HLO text
    fuzz(target, n, seed, max_nodes, timeout_per_kernel, out_dir) -> FuzzReport

Kernels use the ten operators of Act Table 6 (dot, broadcast, reduce, reverse, add,
subtract, negate, minimum, maximum, clamp) over the dtypes and tile sizes of the
target (``profile``); ``fuzz`` compiles and verifies each and sorts it into verified,
unsupported (with a category) or failed (saved for reproduction). With ``probe`` (the
CLI's default) it first asks the backend which operators it compiles in which dtype
(``capability.capable``: one probe kernel each, cached) and draws only those pairs.
"""
from .capability import capable, describe
from .gen import OPS, Draw, FuzzKernel, HypothesisDraw, RandomDraw, generate, kernels, random_fuzz_kernel, random_kernel
from .profile import Profile, profile, resolve_target
from .run import (FAILED, UNSUPPORTED, VERIFIED, FuzzReport, Outcome, categorize, check_kernel, classify, fuzz,
                  report_lines)

__all__ = ["FAILED", "OPS", "UNSUPPORTED", "VERIFIED", "Draw", "FuzzKernel", "FuzzReport", "HypothesisDraw",
           "Outcome", "Profile", "RandomDraw", "capable", "categorize", "check_kernel", "classify", "describe",
           "fuzz", "generate", "kernels", "profile", "random_fuzz_kernel", "random_kernel", "report_lines",
           "resolve_target"]
