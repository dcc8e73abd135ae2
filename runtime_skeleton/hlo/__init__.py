"""HLO text front end: parse what JAX/XLA print into the IR, and print it back.

    parse_module(text, filename="<string>", *, symbols=None, start_line=1,
                 start_col=1, infer_types=True, default_name="main") -> Module
    parse_file(path) -> Module    # any form: HLO text, an XLA dump, StableHLO, a serialized proto
    kernel_module(source) -> Module   # from Python: path, text, bytes, Lowered, XlaComputation
    jax_module(fn, *args) -> Module
    parse_type(text, filename="<string>", *, symbols=None, start_line=1, start_col=1) -> Type
    print_module(module) -> str

Malformed or ill-typed text raises HloError located at the offending token.
"""
from .forms import jax_module, kernel_module
from .forms import read_kernel as parse_file
from .parser import parse_module, parse_type
from .printer import print_module

__all__ = ["jax_module", "kernel_module", "parse_file", "parse_module", "parse_type", "print_module"]
