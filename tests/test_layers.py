"""Layering of the package: the static import graph, and the compiled
modules' code tables against the Python side.

The graph is read from the sources with ``ast`` (codec/ -> ``mqcodec``,
spark/ -> ``mqcodec.spark``), nothing is imported.  Every import is one of
three kinds, kept apart:

* ``module``   -- runs when the importing module is imported;
* ``function`` -- inside a function or method body (deferred to the call);
* ``typing``   -- under ``if TYPE_CHECKING:`` (never at run time).

Rules:

1. the module-level graph has no cycle; with the function-level imports
   added, only the cycles of ``ALLOWED_CYCLES`` remain;
2. ``mqcodec.capture`` (the lowest layer: frames, IP, TCP) imports no
   protocol module -- nothing of ``mqcodec.ibmmq``, ``mqcodec.msmq``,
   ``mqcodec.batch`` or the compiled decoders, directly or through another
   module -- at any kind;
3. no module imports a private name (leading underscore) of another
   ``mqcodec`` module, reads one through a module alias (``mod._name``), or
   imports a private module from outside the package that holds it, except
   the entries of ``ALLOWED_PRIVATE``;
4. the implementation switches (``MQCODEC_*``) are read in one module,
   ``mqcodec._impl``, and no module imports a compiled module by name.

``python tests/test_layers.py`` prints the graph (``--dot`` for graphviz).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> import package (setup.py's package_dir)
SOURCES = {"codec": "mqcodec", "spark": "mqcodec.spark"}

#: Import cycles through function-level imports that are known and tolerated, with the reason.
#: Shrink, never grow.
ALLOWED_CYCLES: dict = {}

#: (importing module, imported module, private name) allowed, with the reason.  Shrink, never grow.
ALLOWED_PRIVATE: dict = {}

#: packages the capture layer must never reach
PROTOCOL_PREFIXES = ("mqcodec.ibmmq", "mqcodec.msmq", "mqcodec.batch", "mqcodec._ext.mq_batch",
                     "mqcodec._ext.msmq_batch", "mqcodec._ext.pcf_batch", "mqcodec._ext.calls_batch",
                     "mqcodec._ext.conversation")


@dataclass(frozen=True)
class Import:
    importer: str      # dotted module name
    target: str        # the module imported (a module of the package when it is one)
    name: str | None   # the attribute imported from ``target`` (None: the module itself)
    kind: str          # "module", "function" or "typing"
    line: int


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for folder, package in SOURCES.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([package] + parts)] = path
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Walker(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict[str, Path]):
        self.module, self.is_package, self.modules = module, is_package, modules
        self.kind = "module"
        self.imports: list[Import] = []
        self.aliases: dict[str, str] = {}   # local name -> mqcodec module it is bound to
        self.names: dict[str, str] = {}     # local name -> mqcodec module it was imported from (a class...)
        self.attrs: list[tuple[str, str, int]] = []  # (module, private attribute, line) read via an alias

    def _nested(self, node, kind):
        saved, self.kind = self.kind, kind if self.kind == "module" else self.kind
        self.generic_visit(node)
        self.kind = saved

    def visit_FunctionDef(self, node):
        self._nested(node, "function")

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node):
        if _is_type_checking(node.test):
            saved, self.kind = self.kind, "typing"
            for child in node.body:
                self.visit(child)
            self.kind = saved
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _resolve(self, level: int, name: str | None) -> str:
        if level == 0:
            return name or ""
        base = self.module.split(".")
        if not self.is_package:
            base = base[:-1]
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def visit_Import(self, node):
        for a in node.names:
            if a.name == "mqcodec" or a.name.startswith("mqcodec."):
                self.imports.append(Import(self.module, a.name, None, self.kind, node.lineno))
                if a.asname:
                    self.aliases[a.asname] = a.name

    def visit_ImportFrom(self, node):
        source = self._resolve(node.level, node.module)
        if not (source == "mqcodec" or source.startswith("mqcodec.")):
            return
        for a in node.names:
            full = source + "." + a.name
            if full in self.modules:       # a submodule
                self.imports.append(Import(self.module, full, None, self.kind, node.lineno))
                self.aliases[a.asname or a.name] = full
            else:
                self.imports.append(Import(self.module, source, a.name, self.kind, node.lineno))
                self.names[a.asname or a.name] = source

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and _private(node.attr):
            # mod._name, or Class._name of a class imported from another module
            owner = self.aliases.get(node.value.id) or self.names.get(node.value.id)
            if owner is not None:
                self.attrs.append((owner, node.attr, node.lineno))
        self.generic_visit(node)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass
class Graph:
    modules: dict[str, Path]
    imports: list[Import]
    private_attrs: list[tuple[str, str, str, int]]  # (importer, module, attribute, line)

    def edges(self, *kinds: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for imp in self.imports:
            if imp.kind in kinds and imp.target in self.modules and imp.target != imp.importer:
                out[imp.importer].add(imp.target)
        return out


def build_graph() -> Graph:
    modules = _modules()
    imports: list[Import] = []
    attrs: list[tuple[str, str, str, int]] = []
    for name, path in modules.items():
        w = _Walker(name, path.name == "__init__.py", modules)
        w.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        imports += w.imports
        attrs += [(name, mod, attr, line) for mod, attr, line in w.attrs if mod != name]
    return Graph(modules, imports, attrs)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def _describe(comp: list[str], graph: Graph, kinds: tuple[str, ...]) -> str:
    members = set(comp)
    lines = ["%s -> %s (%s, line %d)" % (i.importer, i.target, i.kind, i.line) for i in graph.imports
             if i.kind in kinds and i.importer in members and i.target in members and i.target != i.importer]
    return "\n  ".join(sorted(set(lines)))


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph()


# ---------------------------------------------------------------------------------------- the graph itself
def test_graph_is_read_from_the_sources(graph):
    """The walker sees what is there: a known import of each kind, and the
    package's modules (a graph read wrongly would make every rule pass)."""
    assert {"mqcodec.capture.tcp", "mqcodec.ibmmq.framing", "mqcodec.msmq.framing", "mqcodec._impl",
            "mqcodec.spark.pipeline"} <= set(graph.modules)
    kinds = {(i.importer, i.target, i.kind) for i in graph.imports}
    assert ("mqcodec.ibmmq.builders", "mqcodec.ibmmq.tsh", "module") in kinds
    assert ("mqcodec", "mqcodec.batch", "typing") in kinds              # under TYPE_CHECKING
    assert any(i.kind == "function" for i in graph.imports)
    assert len(graph.edges("module")) > 50


def test_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_walker_classifies_imports(tmp_path):
    src = textwrap.dedent("""
        from typing import TYPE_CHECKING
        from . import tcp
        from .tcp import _hidden, Gap
        if TYPE_CHECKING:
            from ..ibmmq import framing
        def f():
            from ..msmq import framing as mf
            return tcp._private_thing, mf, Gap._fields, Gap._hidden_method
    """)
    modules = {"mqcodec.capture.x": tmp_path, "mqcodec.capture.tcp": tmp_path,
               "mqcodec.ibmmq.framing": tmp_path, "mqcodec.msmq.framing": tmp_path}
    w = _Walker("mqcodec.capture.x", False, modules)
    w.visit(ast.parse(src))
    got = {(i.target, i.name, i.kind) for i in w.imports}
    assert got == {("mqcodec.capture.tcp", None, "module"), ("mqcodec.capture.tcp", "_hidden", "module"),
                   ("mqcodec.capture.tcp", "Gap", "module"), ("mqcodec.ibmmq.framing", None, "typing"),
                   ("mqcodec.msmq.framing", None, "function")}
    assert w.attrs == [("mqcodec.capture.tcp", "_private_thing", 9), ("mqcodec.capture.tcp", "_fields", 9),
                       ("mqcodec.capture.tcp", "_hidden_method", 9)]


# ---------------------------------------------------------------------------------------- rule 1: no cycles
def test_module_level_imports_have_no_cycle(graph):
    found = cycles(graph.edges("module"))
    assert not found, "import cycles at module level:\n  " + "\n  ".join(
        _describe(c, graph, ("module",)) for c in found)


def test_function_level_imports_add_only_known_cycles(graph):
    found = cycles(graph.edges("module", "function"))
    unknown = [c for c in found if frozenset(c) not in ALLOWED_CYCLES]
    assert not unknown, "import cycles through deferred imports:\n  " + "\n  ".join(
        _describe(c, graph, ("module", "function")) for c in unknown)
    stale = set(ALLOWED_CYCLES) - {frozenset(c) for c in found}
    assert not stale, "ALLOWED_CYCLES lists cycles that are gone (remove them): %s" % sorted(map(sorted, stale))


#: subpackages seen as one node by the package-level graph (other modules stay themselves)
SUBPACKAGES = ("capture", "ibmmq", "msmq", "batch", "spark", "_ext")


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[1] in SUBPACKAGES else module


def test_subpackages_do_not_import_each_other_in_a_circle(graph):
    """Layers, not modules: e.g. capture -> msmq (a deferred import) and msmq
    -> capture would be a cycle between the two layers even with no module
    cycle."""
    edges: dict[str, set[str]] = defaultdict(set)
    for a, ts in graph.edges("module", "function").items():
        for t in ts:
            if _package_of(a) != _package_of(t):
                edges[_package_of(a)].add(_package_of(t))
    unknown = [c for c in cycles(edges) if frozenset(c) not in ALLOWED_CYCLES]
    assert not unknown, "subpackages importing each other in a circle: %s" % unknown


# ---------------------------------------------------------------------------------------- rule 2: capture is the lowest layer
def test_capture_imports_no_protocol_module(graph):
    edges = graph.edges("module", "function", "typing")
    bad = []
    for start in (m for m in graph.modules if m == "mqcodec.capture" or m.startswith("mqcodec.capture.")):
        seen, todo, via = {start}, [start], {start: None}
        while todo:
            m = todo.pop()
            for t in edges.get(m, ()):
                if t not in seen:
                    seen.add(t)
                    via[t] = m
                    todo.append(t)
        for t in sorted(seen):
            if t.startswith(PROTOCOL_PREFIXES):
                path = [t]
                while via[path[-1]] is not None:
                    path.append(via[path[-1]])
                bad.append(" -> ".join(reversed(path)))
    assert not bad, "the capture layer reaches protocol modules:\n  " + "\n  ".join(bad)


def test_capture_imports_no_protocol_name_directly(graph):
    # also names imported from a package (not only whole modules)
    bad = [i for i in graph.imports if i.importer.startswith("mqcodec.capture") and i.target.startswith(PROTOCOL_PREFIXES)]
    assert not bad, bad


# ---------------------------------------------------------------------------------------- rule 3: private names
def _private_uses(graph: Graph) -> list[tuple[str, str, str, int]]:
    out = []
    for i in graph.imports:
        if i.target == i.importer:
            continue
        if i.name is not None and _private(i.name):
            out.append((i.importer, i.target, i.name, i.line))
        # a private module, imported from outside the package that holds it
        parts = i.target.split(".")
        for k, part in enumerate(parts):
            if _private(part):
                holder = ".".join(parts[:k])
                if not (i.importer == holder or i.importer.startswith(holder + ".")):
                    out.append((i.importer, ".".join(parts[:k + 1]), part, i.line))
                break
    out += graph.private_attrs
    return out


def test_no_module_uses_private_names_of_another(graph):
    uses = _private_uses(graph)
    bad = sorted({u for u in uses if u[:3] not in ALLOWED_PRIVATE})
    assert not bad, "private names used across modules (make them public or move them):\n  " + "\n  ".join(
        "%s uses %s.%s (line %d)" % u for u in bad)
    stale = set(ALLOWED_PRIVATE) - {u[:3] for u in uses}
    assert not stale, "ALLOWED_PRIVATE lists uses that are gone (remove them): %s" % sorted(stale)


def _converter_private_reads(path: Path) -> list[tuple[str, int]]:
    """``conv._name`` reads in ``path`` (``conv``: the Converter a driver is given)."""
    return [(node.attr, node.lineno) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "conv"
            and _private(node.attr)]


def test_the_compiled_driver_uses_the_converters_public_members_only(graph, tmp_path):
    """The compiled engine's driver works on the Converter it is given through
    public members only (issue 13: no module uses another's private names)."""
    drivers = [m for m in graph.modules if m.startswith("mqcodec.convert.") and m != "mqcodec.convert.converter"]
    assert "mqcodec.convert.compiled" in drivers
    found = {m: _converter_private_reads(graph.modules[m]) for m in drivers}
    assert not any(found.values()), {m: v for m, v in found.items() if v}
    # the check sees such a read
    probe = tmp_path / "probe.py"
    probe.write_text("def f(conv):\n    return conv._pending\n")
    assert _converter_private_reads(probe) == [("_pending", 2)]


# ---------------------------------------------------------------------------------------- rule 4: one place decides the implementation
def _env_reads(path: Path) -> list[tuple[str, int]]:
    """``MQCODEC_*`` names read from the environment (os.environ.get / [] / getenv)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            if isinstance(f, ast.Attribute) and (f.attr == "getenv" or (
                    f.attr == "get" and isinstance(f.value, ast.Attribute) and f.value.attr == "environ")):
                key = node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "environ" and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        if isinstance(key, str) and key.startswith("MQCODEC_"):
            out.append((key, node.lineno))
    return out


def test_implementation_switch_is_read_in_one_place(graph):
    readers = {name: _env_reads(path) for name, path in graph.modules.items()}
    readers["setup.py"] = _env_reads(ROOT / "setup.py")
    bad = {name: r for name, r in readers.items() if r and name != "mqcodec._impl"}
    # setup.py's build-only switch (optimisation level) is no implementation choice
    bad.pop("setup.py", None) if all(k == "MQCODEC_OPT_LEVEL" for k, _ in readers["setup.py"]) else None
    assert not bad, "MQCODEC_* switches read outside mqcodec._impl: %s" % bad
    assert not _env_reads(graph.modules["mqcodec._impl"]), "_impl reads the switches through env_flag"
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert "codec\", \"_impl.py\"" in setup and "_impl.env_flag(name)" in setup


def test_no_module_imports_a_compiled_module_by_name(graph):
    bad = [i for i in graph.imports if i.target == "mqcodec._ext" or i.target.startswith("mqcodec._ext.")]
    assert not bad, "compiled modules are chosen by mqcodec._impl.pick, not imported: %s" % bad


# ---------------------------------------------------------------------------------------- mqcodec._impl
def test_env_flag_is_strict():
    from mqcodec import _impl

    assert _impl.env_flag("X", {}) is False
    assert _impl.env_flag("X", {"X": "0"}) is False and _impl.env_flag("X", {"X": ""}) is False
    assert _impl.env_flag("X", {"X": "1"}) is True
    with pytest.raises(ValueError, match="X must be 0 or 1, not 'yes'"):
        _impl.env_flag("X", {"X": "yes"})
    assert _impl.pure_forced({"MQCODEC_PURE": "1"}) and not _impl.pure_forced({})


def test_pick(monkeypatch):
    from mqcodec import _impl

    assert _impl.pick("no_such_module", "py") is None
    assert _impl.pick("no_such_module", None) is None                  # not built: the pure twin
    with pytest.raises(ImportError, match=r"the compiled thing \(mqcodec\._ext\.no_such_module\) is not built"):
        _impl.pick("no_such_module", "c", what="thing")
    with pytest.raises(ValueError, match="impl must be None, 'c' or 'py'"):
        _impl.pick("no_such_module", "C")
    assert _impl.default("no_such_module") == "py"

    # a compiled module that is present but refuses to load (its tables disagree)
    def broken(name):
        raise ImportError("mqcodec._ext.%s: its reason table disagrees" % name)

    monkeypatch.setattr(_impl, "_import", broken)
    with pytest.warns(RuntimeWarning, match="could not be loaded.*reason table disagrees"):
        assert _impl.pick("msmq_batch", None) is None
    with pytest.raises(ImportError, match="is broken: .*reason table disagrees"):
        _impl.pick("msmq_batch", "c")
    monkeypatch.setenv("MQCODEC_PURE", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _impl.pick("msmq_batch", None) is None                  # not even tried


def test_batch_front_door_asks_impl(monkeypatch):
    from mqcodec import _impl
    from mqcodec.batch._front import Implementations

    calls = []
    real = _impl.pick
    monkeypatch.setattr(_impl, "pick", lambda name, impl, **kw: calls.append((name, impl)) or real(name, impl, **kw))
    pure = object()
    impls = Implementations("no_such_module", pure, "test")
    assert impls.default == "py" and impls.pick(None) is pure and impls.pick("py") is pure
    with pytest.raises(ImportError, match="the compiled test batch decoder .* is not built"):
        impls.pick("c")
    assert calls == [("no_such_module", None), ("no_such_module", "py"), ("no_such_module", "c")]


def test_check_codes():
    from mqcodec._impl import check_codes

    check_codes("m", "reason", {"A": 0, "B": 1}, ["A", "B"])
    check_codes("m", "reason", {"B": 1}, {"A": 0, "B": 1, "C": 2}, complete=False)
    with pytest.raises(ImportError, match=r"mqcodec\._ext\.m: its reason table .*B is 1 here but 2 in"):
        check_codes("m", "reason", {"A": 0, "B": 1}, ["A", "X", "B"])
    with pytest.raises(ImportError, match="C \\(2 in the Python side\\) is unknown here"):
        check_codes("m", "reason", {"A": 0, "B": 1}, {"A": 0, "B": 1, "C": 2})
    with pytest.raises(ImportError, match="Z is 5 here but unknown to"):
        check_codes("m", "reason", {"Z": 5}, {"A": 0}, complete=False)


# ---------------------------------------------------------------------------------------- compiled tables
COMPILED_WITH_TABLES = ["msmq_batch", "pcf_batch"]


def _compiled(name):
    from mqcodec import _impl

    try:
        return _impl.pick(name, "c")
    except ImportError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


@pytest.mark.parametrize("name", COMPILED_WITH_TABLES)
def test_compiled_tables_agree_with_python(name):
    mod = _compiled(name)
    mod.check_tables()
    assert set(mod.CODE_TABLES) == set(mod.python_tables())
    if name == "msmq_batch":
        from mqcodec.batch import msmq_pure

        assert len(mod.CODE_TABLES["reason"]) == len(msmq_pure.REASONS) == 61
        assert mod.CODE_TABLES["reason"]["SEC_SIGNATURE"] == msmq_pure.REASONS.index(
            "Signature of %d bytes at offset %d runs past the packet end (%d)")
    else:
        from mqcodec.ibmmq import pcf

        assert mod.CODE_TABLES["MQCFT"] == {n: t for t, n in pcf.PARAMETER_TYPES.items()}
        assert mod.CODE_TABLES["MQCFT"]["MQCFGR"] == 20                   # cmqcfc.h MQCFT_GROUP


def _corruptions(ref, compiled, complete):
    """Ways to damage one Python-side table, each touching a name the compiled module uses."""
    name = sorted(compiled)[-1]
    if isinstance(ref, dict):
        yield "changed", {**ref, name: ref[name] + 1000}
        yield "dropped", {k: v for k, v in ref.items() if k != name}
        if complete:
            yield "added", {**ref, "NEW ENTRY": max(ref.values()) + 1}
    else:
        yield "inserted", ["NEW ENTRY"] + list(ref)          # every later code shifts
        yield "dropped", [k for k in ref if k != name]


@pytest.mark.parametrize("name", COMPILED_WITH_TABLES)
def test_corrupting_the_python_side_is_detected(name):
    mod = _compiled(name)
    tables = mod.python_tables()
    tried = []
    for table, (ref, complete, source) in tables.items():
        for how, bad in _corruptions(ref, mod.CODE_TABLES[table], complete):
            with pytest.raises(ImportError, match=r"mqcodec\._ext\.%s: its %s table disagrees" % (name, table)):
                mod.check_tables({table: (bad, complete, source)})
            tried.append((table, how))
    assert {t for t, _ in tried} == set(tables)
    mod.check_tables()                                       # the real tables still pass


@pytest.mark.parametrize("name, module, table, attr", [
    ("msmq_batch", "mqcodec.batch.msmq_pure", "reason", "REASON_CODES"),
    ("pcf_batch", "mqcodec.batch.errors", "reason", "REASON_CODES"),
    # (mq_layout is generated from mqcodec.ibmmq.pcf: tests/test_batch_mq.py checks it is current)
    ("pcf_batch", "mqcodec.batch.mq_layout", "MQCFT", "PCF_PARAMETER_TYPES"),
])
def test_importing_against_a_changed_python_side_fails(name, module, table, attr):
    """End to end, in a fresh interpreter: a reason inserted in the middle of
    the Python table (or an MQCFT value changed) before the compiled module is
    imported makes its import fail, naming the table."""
    _compiled(name)
    code = textwrap.dedent("""
        import importlib, sys
        mod = importlib.import_module(%r)
        table = getattr(mod, %r)
        if %r.endswith("PARAMETER_TYPES"):
            t = min(table)
            table[t + 100] = table.pop(t)                       # an MQCFT value changed
        else:
            names = sorted(table, key=table.get)
            table.clear()
            table.update({n: i for i, n in enumerate(names[:3] + ["INSERTED"] + names[3:])})
        try:
            importlib.import_module("mqcodec._ext.%s")
        except ImportError as exc:
            print("REFUSED", exc)
        else:
            print("ACCEPTED")
    """) % (module, attr, attr, name)
    env = dict(os.environ, MQCODEC_PURE="1")   # mqcodec.batch must not load the compiled module first
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("REFUSED"), out.stdout + out.stderr
    assert "its %s table disagrees" % table in out.stdout


# ---------------------------------------------------------------------------------------- the graph, printed
def _print(dot: bool) -> None:
    g = build_graph()
    if dot:
        print("digraph mqcodec {\n  rankdir=LR; node [shape=box, fontsize=10];")
        for i in sorted({(i.importer, i.target, i.kind) for i in g.imports if i.target in g.modules
                         and i.target != i.importer}):
            style = {"module": "solid", "function": "dashed", "typing": "dotted"}[i[2]]
            print('  "%s" -> "%s" [style=%s];' % (i[0], i[1], style))
        print("}")
        return
    for kind in ("module", "function", "typing"):
        print("# %s-level imports" % kind)
        for m, ts in sorted(g.edges(kind).items()):
            print("%s -> %s" % (m, ", ".join(sorted(ts))))


if __name__ == "__main__":
    _print("--dot" in sys.argv)


# ---------------------------------------------------------------------------------------- one lenient-mode collector
def _raise_or_warn_functions(tree: ast.AST) -> list[tuple[str, int]]:
    """Functions that decide on ``lenient`` between raising DecodeError and recording a DecodeWarning."""
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = list(ast.walk(fn))
        lenient = any((isinstance(n, ast.Name) and n.id == "lenient") or
                      (isinstance(n, ast.Attribute) and n.attr == "lenient") for n in nodes)
        warns = any(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "DecodeWarning"
                    for n in nodes)
        raises = any(isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)
                     and getattr(n.exc.func, "id", "") == "DecodeError" for n in nodes)
        if lenient and warns and raises:
            out.append((fn.name, fn.lineno))
    return out


def test_one_lenient_problem_collector(graph):
    """Raise-or-warn is decided in one place, mqcodec.errors.Problems.error
    (issue 13: PCF, MSMQ packets and MSMQ optional headers had one each)."""
    found = {m: f for m, p in graph.modules.items()
             if (f := _raise_or_warn_functions(ast.parse(p.read_text(encoding="utf-8"))))}
    assert list(found) == ["mqcodec.errors"] and [n for n, _ in found["mqcodec.errors"]] == ["error"], found
    probe = ast.parse("def violation(self, f, at, r):\n    if self.lenient:\n        self.w.append(DecodeWarning(f))\n"
                      "        return\n    raise DecodeError(f)\n")
    assert _raise_or_warn_functions(probe) == [("violation", 1)]
