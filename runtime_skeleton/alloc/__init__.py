"""Phase 2: topological ordering and allocation of a pii graph, first fit or in CP-SAT (Act §6,
Appendix C.4–C.5)."""
from .allocate import Allocation, AllocationFailed, SolveOptions, allocate, phase2
from .order import heuristic_order, topological_orders

__all__ = ["Allocation", "AllocationFailed", "SolveOptions", "allocate", "phase2", "heuristic_order", "topological_orders"]
