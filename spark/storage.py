"""Captures and outputs by URI, for the Spark engine and the ``mqcodec`` data source.

    expand("/data/caps/*.pcap")                 -> ['/data/caps/a.pcap', '/data/caps/b.pcap']
    expand("file:///data/caps")                 -> the files in the folder, sorted
    expand(["hdfs://nn/caps/*.pcap", "s3a://bucket/x.pcapng"])
    with input_source(uri) as source: ...        # on an executor: a path or a seekable file

A plain path is resolved on the driver (``os.path.abspath``), so a relative
path means the same file on every executor; ``file://`` URIs become plain
absolute paths.  Other URIs (``hdfs://``, ``s3://``/``s3a://``, ``gs://``,
``abfs://``...) stay URIs and are read through :mod:`pyarrow.fs` (``s3a`` and
``s3n`` are S3 to pyarrow), or through fsspec when pyarrow does not know the
scheme and fsspec with the right plugin is installed.

Expansion follows Hadoop's input rules: a folder gives the files directly
in it (not the sub-folders' files), hidden files (``.name``, ``_name``:
``_SUCCESS``, ``.crc``) left out; a glob (``*``, ``?``, ``[...]`` in any
path component) gives the matching files, each glob's matches sorted, on
the filesystem the glob names; a path named explicitly is kept even when
the driver cannot see it (the executors report it as not read, as the
local engine does with a missing input).
"""
from __future__ import annotations

import contextlib
import fnmatch
import importlib
import os
import re
from typing import Any, Iterable, Union
from urllib.parse import urlsplit

__all__ = ["is_uri", "resolve", "expand", "filesystem", "open_input", "display_name", "AttemptFolder", "converting_into", "GLOB_CHARS"]

GLOB_CHARS = "*?["
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: schemes pyarrow.fs knows under another name
_ALIASES = {"s3a": "s3", "s3n": "s3"}


def is_uri(item: str) -> bool:
    return bool(_URI.match(item))


def resolve(item: Union[str, os.PathLike]) -> str:
    """A plain absolute path for a local file (plain path, relative or not, or
    ``file://`` URI), else the URI as given."""
    item = os.fspath(item)
    if is_uri(item):
        parts = urlsplit(item)
        if parts.scheme.lower() != "file":
            return item
        if parts.netloc not in ("", "localhost"):
            raise ValueError("file URI with a host is not a local path: %r" % (item,))
        from urllib.parse import unquote

        return unquote(parts.path) or "/"
    if item.startswith("file:"):  # file:/abs/path (Hadoop's spelling)
        return os.path.abspath(item[5:])
    return os.path.abspath(os.path.expanduser(item))


def filesystem(uri: str):
    """``(pyarrow.fs.FileSystem, path on it)`` for a resolved path or URI."""
    from pyarrow import fs as pafs

    if not is_uri(uri):
        return pafs.LocalFileSystem(), uri
    scheme = urlsplit(uri).scheme.lower()
    alias = _ALIASES.get(scheme)
    target = alias + uri[len(scheme):] if alias else uri
    try:
        return pafs.FileSystem.from_uri(target)
    except Exception as first:  # pyarrow does not know the scheme (or lacks its support): fsspec
        try:
            # optional: only for schemes pyarrow.fs does not know (no stubs needed for an Any)
            fsspec: Any = importlib.import_module("fsspec")
            from pyarrow.fs import FSSpecHandler, PyFileSystem

            fs, path = fsspec.core.url_to_fs(uri)
        except Exception:
            raise ValueError("cannot open %r: pyarrow.fs says %s (and fsspec does not know %s:// either)"
                             % (uri, first, scheme)) from first
        return PyFileSystem(FSSpecHandler(fs)), path


def _join(base_uri: str, base_path: str, path: str) -> str:
    """The URI of ``path``, a path on the filesystem of ``base_uri`` (whose
    own path there is ``base_path``): ``hdfs://nn:8020`` + ``/a/b``, but
    ``s3a://`` + ``bucket/a/b`` (object stores put the bucket in the path)."""
    if not is_uri(base_uri):
        return path
    parts = urlsplit(base_uri)
    if parts.netloc and base_path.lstrip("/").startswith(parts.netloc):  # bucket-style
        return "%s://%s" % (parts.scheme, path.lstrip("/"))
    return "%s://%s/%s" % (parts.scheme, parts.netloc, path.lstrip("/"))


def _hidden(name: str) -> bool:
    return name.startswith(".") or name.startswith("_")


def _glob(fs, pattern: str) -> list[str]:
    """Paths on ``fs`` matching ``pattern``, component by component."""
    from pyarrow.fs import FileSelector, FileType

    absolute = pattern.startswith("/")
    parts = [p for p in pattern.split("/") if p]
    fixed = []
    while parts and not any(c in parts[0] for c in GLOB_CHARS):
        fixed.append(parts.pop(0))
    base = ("/" if absolute else "") + "/".join(fixed)
    current = [base]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        nxt = []
        for folder in current:
            try:
                infos = fs.get_file_info(FileSelector(folder or "/", recursive=False))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for info in infos:
                name = info.base_name
                if not fnmatch.fnmatchcase(name, part) or (_hidden(name) and not part.startswith((".", "_"))):
                    continue
                if last or info.type == FileType.Directory:
                    nxt.append(info.path)
        current = nxt
    return sorted(current)


def expand(spec: Union[str, os.PathLike, Iterable]) -> list[str]:
    """Paths, URIs, folders and globs (a list, or one string with commas) ->
    the capture files, in order (each glob's and folder's files sorted)."""
    from pyarrow.fs import FileSelector, FileType

    if isinstance(spec, (str, os.PathLike)):
        items = [s for s in os.fspath(spec).split(",")]
    else:
        items = [os.fspath(s) for s in spec]
    out: list[str] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        uri = resolve(item)
        fs, path = filesystem(uri)
        if any(c in path for c in GLOB_CHARS):
            for hit in _glob(fs, path):
                info = fs.get_file_info(hit)
                if info.type == FileType.File:
                    out.append(_join(uri, path, hit))
                elif info.type == FileType.Directory:
                    out.extend(_folder(fs, uri, path, hit))
            continue
        info = fs.get_file_info(path)
        if info.type == FileType.Directory:
            out.extend(_folder(fs, uri, path, path))
        else:  # a file, or a name the driver cannot see: the executor reports it
            out.append(uri)
    return out


def _folder(fs, uri: str, path: str, folder: str) -> list[str]:
    from pyarrow.fs import FileSelector, FileType

    infos = fs.get_file_info(FileSelector(folder, recursive=False))
    return [_join(uri, path, i.path) for i in sorted(infos, key=lambda i: i.path)
            if i.type == FileType.File and not _hidden(i.base_name)]


def display_name(uri: str) -> str:
    """The capture's name in the tables and reports: its file name."""
    return os.path.basename(urlsplit(uri).path if is_uri(uri) else uri) or uri


def open_input(uri: str):
    """What the converter reads: a local path as it is (the compiled core
    opens it itself), otherwise a seekable pyarrow input file (close it)."""
    if not is_uri(uri):
        return uri
    fs, path = filesystem(uri)
    return fs.open_input_file(path)


@contextlib.contextmanager
def input_source(uri: str):
    """:func:`open_input` for a ``with`` block: the file it opened is closed
    afterwards (a local path needs nothing)."""
    source = open_input(uri)
    try:
        yield source
    finally:
        if source is not uri and hasattr(source, "close"):
            source.close()


class AttemptFolder:
    """A task attempt's own folder under ``root`` (a job's temporary local output),
    whose files are moved into ``root`` at the same relative places when the attempt
    succeeds (:meth:`commit`): a retried or speculative attempt of the same task never
    writes into a file another one writes.  :meth:`discard` removes what is left."""

    def __init__(self, root: str, name: str) -> None:
        import uuid

        self.root = root
        self.path = os.path.join(root, ".attempt-%s-%s" % (name, uuid.uuid4().hex[:12]))

    def commit(self, paths: Iterable[str]) -> None:
        """Move ``paths`` (files under :attr:`path`) into place under :attr:`root`."""
        for path in paths:   # attempt/<table>[/date=...]/part-N.parquet -> root/<table>[/date=...]/
            final = os.path.join(self.root, os.path.relpath(path, self.path))
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.replace(path, final)

    def discard(self) -> None:
        import shutil

        shutil.rmtree(self.path, ignore_errors=True)


@contextlib.contextmanager
def converting_into(root: str, name: str, options, *, partition_by=None, part: str = "part-00000", wrap=None):
    """A Spark task's conversion that writes its own Parquet files: yields the
    :class:`~mqcodec.convert.Converter` and the sink's
    :class:`~mqcodec.convert.sinks.WriteFailures` (``wrap``: a sink around the
    task's own, e.g. one that renumbers).  The files are written into an
    :class:`AttemptFolder` of ``root`` (``name`` its name) and moved into place
    when the body ends without an exception, after the converter has drained;
    otherwise the writer threads are joined and the folder removed.  No empty
    files are written: the driver completes the tables."""
    from mqcodec.convert import Converter
    from mqcodec.convert.job import overlapped
    from mqcodec.convert.sinks import DatasetSink, WriteFailures

    attempt = AttemptFolder(root, name)
    files = DatasetSink.of(attempt.path, options, partition_by=partition_by, part=part)
    # options.threads: the task's threads, overlapped as the local engine's
    sink, render_thread = overlapped(files, options)
    write = WriteFailures(wrap(sink) if wrap is not None else sink)
    conv = Converter(write, options, render_thread=render_thread)
    try:
        try:
            yield conv, write
            conv.drain()
        finally:
            conv.drain_quietly()
        sink.close(complete=False)
        attempt.commit(files.paths)
    except BaseException:
        with contextlib.suppress(Exception):   # the writer threads joined before the folder goes
            sink.close(complete=False)
        raise
    finally:
        attempt.discard()
