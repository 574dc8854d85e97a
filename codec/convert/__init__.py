"""Captures in, tables out: the main job of mqcodec, its stages wired together.

    capture file ─► frames ─► TCP stream events per connection ─► one framer
    per direction (IBM MQ TSH framing, MSMQ PacketSize framing, by port or by
    content) ─► units ─► batch decoders ─► Arrow tables ─► a sink

Two implementations run the capture stages: the pure pipeline
(:mod:`mqcodec.capture` and the framers) and the compiled capture core
(``mqcodec._ext.capture_core``, driven by :mod:`.compiled`); the tables are
the same whichever runs (docs/pipeline.md).

Modules, each one concern:

* :mod:`.options`    -- :class:`ConvertOptions`, the one options object of both engines
* :mod:`.protocols`  -- which protocol a direction speaks, and its framer
* :mod:`.sources`    -- reading a capture source (again, from its start)
* :mod:`.converter`  -- :class:`Converter`: frames or captures in, rows of the tables out (no I/O)
* :mod:`.compiled`   -- the compiled capture core driving a :class:`Converter`
* :mod:`.spool`      -- frames of some connections as a capture the compiled core reads
* :mod:`.keys`       -- ``message_key`` and ``call_key``, from the input only
* :mod:`.tables`     -- the output tables and their schemas
* :mod:`.sinks`      -- where the tables go (Parquet datasets, background writers, memory)
* :mod:`.job`        -- :func:`convert`, the local engine
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use at run time (mqcodec._lazy): mqcodec.convert.tables alone stays light
    from ..errors import KeyOverflow, NoCaptureRead
    from .converter import Converter
    from .job import convert
    from .options import ConvertOptions, available_cores, writer_threads
    from .sinks import BackgroundSink, DatasetSink, TableCollector, read_table
    from .tables import TABLES, table_schema

__all__ = ["convert", "Converter", "ConvertOptions", "available_cores", "writer_threads", "NoCaptureRead",
           "KeyOverflow", "TABLES", "table_schema", "DatasetSink", "BackgroundSink", "TableCollector",
           "read_table"]

from .._lazy import lazy as _lazy  # noqa: E402

__getattr__, __dir__ = _lazy(__name__, __file__, globals())
