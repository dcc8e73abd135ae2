"""HLO text front end: parse what JAX/XLA print into the IR, and print it back.

    parse_module(text, filename="<string>", *, symbols=None, start_line=1,
                 start_col=1, infer_types=True, default_name="main") -> Module
    parse_file(path) -> Module
    parse_type(text, filename="<string>", *, symbols=None, start_line=1, start_col=1) -> Type
    print_module(module) -> str

Malformed or ill-typed text raises HloError located at the offending token.
"""
from .parser import parse_file, parse_module, parse_type
from .printer import print_module

__all__ = ["parse_file", "parse_module", "parse_type", "print_module"]
