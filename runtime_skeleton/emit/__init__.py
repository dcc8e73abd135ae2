"""Module 6 (Act §6.3): the allocated pii graph as a program."""
from .program import emit_program, program_json

__all__ = ["emit_program", "program_json"]
