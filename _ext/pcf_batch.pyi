# Stub of the Cython module pcf_batch.pyx (the compiled twin of mqcodec.batch.pcf_pure);
# mqcodec.batch is its typed front.  Other names: see __getattr__.
from typing import Any

def decode_pcf_buffers(buf: Any, offsets: Any, *, encoding: int | None = ..., ccsid: int | None = ...,
                       valid: Any = ..., first: int = ...) -> tuple[Any, Any]: ...
def __getattr__(name: str) -> Any: ...
