"""The reference interpreter: numpy semantics of every IR op, exactly as XLA:CPU computes them.

``evaluate(module, args)`` runs a module; ``OP_IMPLS`` holds the per-op semantics that
the accelerator simulator reuses; ``npz_io`` reads and writes kernel inputs/outputs.
"""
from .interpreter import check_argument, evaluate, evaluate_computation, flatten
from .npz_io import load_inputs, random_inputs, save_arrays
from .ops_impl import OP_IMPLS, Context, Value, convert_array

__all__ = [
    "OP_IMPLS", "Context", "Value", "check_argument", "convert_array", "evaluate",
    "evaluate_computation", "flatten", "load_inputs", "random_inputs", "save_arrays",
]
