"""The machine-program layer: what the compiler emits and every tool downstream reads.

- ``model``: the program (inputs, outputs, constants, instructions with affine attributes
  in counted loops);
- ``text``: its assembly text, parsed with located errors and printed back;
- ``verify``: every instruction's attributes, constraint and slices checked symbolically
  over its loops' ranges, without unrolling them.
"""
from .model import Affine, Attr, ConcreteInstr, ConstData, Item, Loop, Program, ProgramError, TensorDecl, shift, value_at
from .text import MAX_EXECUTED, instr_text, parse_program, print_program

__all__ = ["MAX_EXECUTED", "Affine", "Attr", "ConcreteInstr", "ConstData", "Item", "Loop", "Program", "ProgramError",
           "TensorDecl", "instr_text", "parse_program", "print_program", "shift", "value_at"]
