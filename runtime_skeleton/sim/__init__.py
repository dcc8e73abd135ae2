"""Functional simulator (Act Def. 6) of a generated target, and the program format."""
from .machine import Machine, SimError, run_program
from .program import Program, parse_program, print_program

__all__ = ["Machine", "Program", "SimError", "parse_program", "print_program", "run_program"]
