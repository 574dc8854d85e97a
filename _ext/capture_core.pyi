# Stub of the Cython module capture_core.pyx (the compiled capture core: pcap/pcapng walk,
# IPv4/IPv6 and fragments, TCP reassembly, both stream framers), driven by
# mqcodec.convert.compiled and mqcodec.capture's compiled stages.  CaptureCore's many
# methods (feed, finish, take, take_frames, take_stream_events, stats, ...): see __getattr__.
from typing import Any

class CaptureCore:
    def __init__(self, mq_ports: Any = ..., msmq_ports: Any = ..., detect_by_content: bool = ..., *,
                 server_ports: Any = ..., max_closed: int = ..., max_connections: int = ...,
                 max_reassembly_bytes: int = ..., max_reassembly_segments: int = ...,
                 max_total_buffer: int | None = ..., units: bool = ..., streams_by_frame: bool = ...,
                 stream_events: bool = ..., all_frames: bool = ...) -> None: ...
    def __getattr__(self, name: str) -> Any: ...

def frame_keys(data: Any, linktypes: Any, caplens: Any, origlens: Any) -> list: ...
def pcap_count(buf: Any, limit: int, big: bool, max_len: int) -> tuple[int, int, int]: ...
def __getattr__(name: str) -> Any: ...
