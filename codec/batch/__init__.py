"""Batch decoders: many records in, Arrow record batches out (see schema.py)."""
