"""Which implementation runs: the compiled core or its pure-Python twin.

Every compiled module ``mqcodec._ext.<name>`` has a pure-Python twin with
the same entry points (msgpack style).  This module is the one place that
decides which of the two runs; the batch front door (``mqcodec.batch``), the
capture converter and ``setup.py`` ask it:

* :func:`pick` -- the compiled module for a call's ``impl`` argument, or None
  when the pure twin runs.  ``impl=None``: the compiled one unless it is not
  built or ``MQCODEC_PURE=1``; ``"py"``: the pure one; ``"c"``: the compiled
  one or ImportError (an explicit choice wins over the environment).
* :func:`default` -- ``"c"`` or ``"py"``, what ``impl=None`` runs.
* :func:`env_flag` / :func:`pure_forced` -- the ``MQCODEC_*`` switches, read
  the same way at build time (``setup.py`` loads this file by path) and at
  run time: ``""``/``"0"`` off, ``"1"`` on, anything else an error.
* :func:`check_codes` -- the compiled modules check, when they are imported,
  that the code tables they were compiled with are the Python side's
  (structure, field and reason codes, MQCFT values, fixed lengths...); a
  table that disagrees makes the import fail with ImportError ("rebuild it").

A compiled module that is absent falls back to the pure twin silently (no
compiler at install time); one that is present but refuses to load (its
tables disagree, an ABI mismatch) falls back with a RuntimeWarning under
``impl=None`` and raises under ``impl="c"``.

Standard library only: ``setup.py`` imports it before the package exists.
"""
from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType
from typing import Mapping, Optional, Sequence, Union

__all__ = ["ENV_PURE", "ENV_REQUIRE", "IMPLS", "env_flag", "pure_forced", "load", "pick", "default",
           "check_codes"]

#: ``MQCODEC_PURE=1``: build no extension (setup.py); run the pure twins (at run time)
ENV_PURE = "MQCODEC_PURE"
#: ``MQCODEC_REQUIRE_EXT=1``: a compiled module that cannot be built fails the build (setup.py)
ENV_REQUIRE = "MQCODEC_REQUIRE_EXT"
#: the values of every ``impl`` argument (None = the default)
IMPLS = ("c", "py")

_PACKAGE = "mqcodec._ext."


def env_flag(name: str, environ: Optional[Mapping[str, str]] = None) -> bool:
    """The on/off switch ``name`` of the environment: unset, ``""`` or
    ``"0"`` is off, ``"1"`` on; any other value raises ValueError."""
    value = (os.environ if environ is None else environ).get(name, "")
    if value not in ("", "0", "1"):
        raise ValueError("%s must be 0 or 1, not %r" % (name, value))
    return value == "1"


def pure_forced(environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when ``MQCODEC_PURE=1``: ``impl=None`` runs the pure twins."""
    return env_flag(ENV_PURE, environ)


def _import(name: str) -> ModuleType:
    return importlib.import_module(_PACKAGE + name)


def load(name: str) -> Optional[ModuleType]:
    """The compiled module ``mqcodec._ext.<name>``, or None when it is not
    built.  A module that is present but fails to import (its code tables
    disagree with the Python side, a broken build) warns and gives None."""
    try:
        return _import(name)
    except ModuleNotFoundError as exc:
        if exc.name != _PACKAGE + name:
            raise  # something the compiled module itself imports is missing
        return None
    except ImportError as exc:
        warnings.warn("mqcodec: the compiled %s could not be loaded (%s); its pure-Python twin runs"
                      % (_PACKAGE + name, exc), RuntimeWarning, stacklevel=2)
        return None


def pick(name: str, impl: Optional[str], *, what: str = "") -> Optional[ModuleType]:
    """The compiled module to run for ``impl``, or None for the pure twin.
    ``what`` names the module in the ImportError ``impl="c"`` raises when it
    is not built."""
    if impl is None:
        return None if pure_forced() else load(name)
    if impl == "py":
        return None
    if impl == "c":
        try:
            return _import(name)
        except ImportError as exc:
            missing = isinstance(exc, ModuleNotFoundError) and exc.name == _PACKAGE + name
            raise ImportError("the compiled %s (%s%s) is %s" % (
                what or name, _PACKAGE, name, "not built" if missing else "broken: %s" % exc)) from exc
    raise ValueError("impl must be None, 'c' or 'py', not %r" % (impl,))


def default(name: str) -> str:
    """``"c"`` when ``impl=None`` runs the compiled ``name``, else ``"py"``."""
    return "py" if pick(name, None) is None else "c"


def check_codes(module: str, table: str, compiled: Mapping[str, int],
                python: Union[Mapping[str, int], Sequence[str]], *, complete: bool = True,
                source: str = "the Python side") -> None:
    """Check a code table a compiled module was built with against the
    Python side's: ``compiled`` maps names to the codes (or values) the
    module uses; ``python`` is the Python side's mapping, or its list of
    names (index = code).  Every name of ``compiled`` must have the same
    code in ``python``; with ``complete``, ``python`` may name nothing more.
    Raises ImportError naming each disagreement."""
    if isinstance(python, Mapping):
        ref = dict(python)
    else:
        ref = {}
        for code, name in enumerate(python):
            ref.setdefault(name, code)
    problems = []
    for name, code in compiled.items():
        if name not in ref:
            problems.append("%s is %d here but unknown to %s" % (name, code, source))
        elif ref[name] != code:
            problems.append("%s is %d here but %d in %s" % (name, code, ref[name], source))
    if complete:
        problems += ["%s (%d in %s) is unknown here" % (name, ref[name], source)
                     for name in ref if name not in compiled]
    if problems:
        raise ImportError("mqcodec._ext.%s: its %s table disagrees with %s (rebuild it, or change both): %s"
                          % (module, table, source, "; ".join(problems)))
