"""Lazy package namespaces (PEP 562): a package's public names imported on first use.

A package lists its public names as ordinary ``from .module import Name``
lines under ``if TYPE_CHECKING:`` (what type checkers and readers see, one
line per module as before) and ends with::

    __getattr__, __dir__ = lazy(__name__, __file__, globals())

At run time nothing is imported with the package: ``package.Name`` (and
``from package import Name``) imports ``.module`` when first asked for, so a
command that uses one module of a package does not pay for the others.
The import lines are read from the package's own source, so each name is
still spelt once.
"""
from __future__ import annotations

import ast
import importlib
from typing import Any, Callable


def _names(path: str, loader: Any = None, package: str = "") -> dict[str, tuple[str, str]]:
    """name -> (relative module, attribute) of the ``from . import`` lines under
    ``if TYPE_CHECKING:`` in the source file ``path`` (attribute "" for a
    submodule: ``from . import constants``); the source is asked of the
    package's ``loader`` when it has one (a zip import, say)."""
    source = loader.get_source(package) if loader is not None and hasattr(loader, "get_source") else None
    if source is None:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    tree = ast.parse(source, path)
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom) or not stmt.level:
                continue
            base = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                if stmt.module is None:   # from . import submodule
                    out[alias.asname or alias.name] = (base + alias.name, "")
                else:
                    out[alias.asname or alias.name] = (base, alias.name)
    return out


def lazy(package: str, path: str, namespace: dict) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """``(__getattr__, __dir__)`` for the package ``package`` whose
    ``__init__`` is the file ``path`` and whose globals are ``namespace``."""
    names = _names(path, namespace.get("__loader__"), package)

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError("module %r has no attribute %r" % (package, name))
        module = importlib.import_module(where[0], package)
        value = getattr(module, where[1]) if where[1] else module
        namespace[name] = value
        return value

    def __dir__() -> list:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
