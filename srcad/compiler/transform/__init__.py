"""Transformations: simple form → adjoint program (reverse mode)."""
