"""Errors in .isa files: always ``file:line:col: message``."""
from runtime_skeleton.errors import ActgenError


class IsaError(ActgenError):
    pass
