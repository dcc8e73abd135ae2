"""Functional simulator (Act Def. 6) of a generated target, the program format, and the
timing model and roofline that estimate a program's speed."""
from .machine import Machine, SimError, run_program
from ..program import Program, parse_program, print_program
from .roofline import Roofline, roofline
from .timing import Timing, time_program

__all__ = ["Machine", "Program", "Roofline", "SimError", "Timing", "parse_program", "print_program", "roofline",
           "run_program", "time_program"]
