"""Cython-accelerated core of mqcodec (see docs/architecture.md)."""
