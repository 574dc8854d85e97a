# Stub of the Cython module mq_batch.pyx (the compiled twin of mqcodec.batch.mq_pure);
# mqcodec.batch is its typed front.  Other names: see __getattr__.
from typing import Any

def decode_mq_buffers(buf: Any, offsets: Any, *, encoding: int | None = ..., ccsid: int | None = ...,
                      valid: Any = ..., md_only: Any = ...) -> Any: ...
def __getattr__(name: str) -> Any: ...
