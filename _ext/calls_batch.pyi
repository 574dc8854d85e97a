# Stub of the Cython module calls_batch.pyx: the compiled twin of
# mqcodec.ibmmq.calls_batch.decode_units (the same signature and rows).
import pyarrow as pa

from mqcodec.ibmmq.calls_batch import DECODED_SCHEMA as DECODED_SCHEMA, LAYOUT as LAYOUT

__all__ = ["decode_units", "DECODED_SCHEMA", "LAYOUT"]

def decode_units(data, starts, lengths, full_lengths=None) -> pa.Table: ...
