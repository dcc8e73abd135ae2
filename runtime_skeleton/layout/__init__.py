"""Layouts: how logical tensor coordinates map to bytes (XLA layouts, tiles)."""
from .flatten import bflat, byte_size, unbflat

__all__ = ["bflat", "byte_size", "unbflat"]
