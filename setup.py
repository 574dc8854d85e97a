"""Build script: maps the design card's folders onto the import package and
builds the optional Cython core (docs/packaging.md).

    codec/   -> mqcodec         (pure Python, always installed)
    _ext/    -> mqcodec._ext    (Cython; optional, see below)
    spark/   -> mqcodec.spark   (PySpark adapter)

Every ``_ext/*.pyx`` is one extension module ``mqcodec._ext.<name>``.  The
``.pyx`` files are cythonized when ``build_ext`` runs (not when this file is
read), so an sdist carries the Cython sources and never generated C.

Environment switches (all read at build time):

``MQCODEC_PURE=1``
    build no extension at all: the pure-Python package only.
``MQCODEC_REQUIRE_EXT=1``
    a Cython core that cannot be built -- Cython or numpy missing, no
    ``_ext/*.pyx`` found, a module that does not cythonize or does not
    compile -- fails the build.  Without it such a module is skipped with a
    warning and its pure-Python twin is used (users without a compiler still
    get a working install).  ``make setup`` and cibuildwheel set it.
``MQCODEC_OPT_LEVEL=0|1|2|3|s``
    the C optimisation level (default 3).  0 only to make test builds fast
    (tests/test_packaging.py); never for a wheel that ships.
"""
import glob
import importlib.util
import os
import re
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _load_impl():
    """codec/_impl.py, the one module that reads the implementation switches
    (standard library only: loaded by path, before the package exists)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "codec", "_impl.py")
    spec = importlib.util.spec_from_file_location("_mqcodec_build_impl", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_impl = _load_impl()
ENV_PURE = _impl.ENV_PURE
ENV_REQUIRE = _impl.ENV_REQUIRE
ENV_OPT = "MQCODEC_OPT_LEVEL"

# the same directives as tests/fuzz/build_instrumented.sh: what is fuzzed is what ships
CYTHON_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
}
EXT_DIR = "_ext"


def _flag(name):
    try:
        return _impl.env_flag(name)
    except ValueError as exc:
        raise SystemExit("mqcodec: %s" % (exc,)) from None


def _opt_flag():
    level = os.environ.get(ENV_OPT, "3")
    if not re.fullmatch(r"[0-3s]", level):
        raise SystemExit("mqcodec: %s must be one of 0 1 2 3 s, not %r" % (ENV_OPT, level))
    return "-O" + level


class CoreBuildError(Exception):
    """The Cython core could not be built (raised only with MQCODEC_REQUIRE_EXT=1)."""


class OptionalBuildExt(build_ext):
    """Cythonize and compile the core; by default a module that cannot be
    built is skipped with a warning, with MQCODEC_REQUIRE_EXT=1 it fails the
    build."""

    def run(self):
        if self.extensions:
            self.extensions = self._cythonized(self.extensions)
        if not self.extensions:
            return
        try:
            super().run()
        except CoreBuildError:
            raise
        except Exception as exc:  # outside one module's build, e.g. no usable compiler at all
            self._give_up("the build failed (%s: %s)" % (type(exc).__name__, exc))

    def _cythonized(self, exts):
        try:
            from Cython.Build import cythonize
            import numpy
        except ImportError as exc:
            self._give_up("Cython and numpy are needed to build it (%s)" % (exc,))
            return []
        out = []
        for ext in exts:  # one at a time: a module that fails is skipped alone (or fails the build)
            if getattr(ext, "_mqcodec_cythonized", False):  # build_ext run a second time
                out.append(ext)
                continue
            ext.include_dirs.append(numpy.get_include())
            try:
                (done,) = cythonize([ext], compiler_directives=CYTHON_DIRECTIVES, force=self.force)
            except Exception as exc:
                self._give_up("%s did not cythonize (%s: %s)" % (ext.name, type(exc).__name__, exc),
                              ext.name)
                continue
            # cythonize returns a new Extension (sources now .c/.cpp, language from the
            # "# distutils:" header); keep the object finalize_options already set up
            vars(ext).update((k, v) for k, v in vars(done).items() if not k.startswith("_"))
            ext._mqcodec_cythonized = True
            out.append(ext)
        return out

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._give_up("%s did not compile (%s: %s)" % (ext.name, type(exc).__name__, exc),
                          ext.name)
            # not built: leave it out of the outputs (editable installs copy them)
            self.extensions = [e for e in self.extensions if e is not ext]

    @staticmethod
    def _give_up(reason, module=None):
        if _flag(ENV_REQUIRE):
            raise CoreBuildError(
                "mqcodec: the Cython core was not built: %s; %s=1 makes this an error "
                "(unset it to fall back to the pure-Python implementation)" % (reason, ENV_REQUIRE))
        twin = "its pure-Python twin" if module else "the pure-Python implementation"
        sys.stderr.write("mqcodec: WARNING: %s; %s will be used (set %s=1 to make this an "
                         "error)\n" % (reason, twin, ENV_REQUIRE))


def extensions():
    """One Extension per _ext/*.pyx, not yet cythonized (OptionalBuildExt does that)."""
    pure, require = _flag(ENV_PURE), _flag(ENV_REQUIRE)
    if pure and require:
        raise SystemExit("mqcodec: %s=1 and %s=1 contradict each other" % (ENV_PURE, ENV_REQUIRE))
    if pure:
        return []
    sources = sorted(glob.glob(os.path.join(EXT_DIR, "*.pyx")))
    if not sources and require:
        raise SystemExit("mqcodec: %s=1 but there is no %s/*.pyx to build (an incomplete sdist?)"
                         % (ENV_REQUIRE, EXT_DIR))
    # the .pxi/.pxd every module may include: a change to one rebuilds the modules (and
    # setuptools lists them in the sdist, as MANIFEST.in does)
    depends = sorted(glob.glob(os.path.join(EXT_DIR, "*.pxi")) + glob.glob(os.path.join(EXT_DIR, "*.pxd")))
    opt = _opt_flag()
    return [
        Extension(
            "mqcodec._ext." + os.path.splitext(os.path.basename(src))[0],
            [src],
            depends=depends,
            extra_compile_args=[opt] + (["-g0"] if opt == "-O0" else []),
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
        for src in sources
    ]


setup(
    package_dir={
        "mqcodec": "codec",
        "mqcodec._ext": EXT_DIR,
        "mqcodec.spark": "spark",
    },
    packages=[
        "mqcodec",
        "mqcodec.ibmmq",
        "mqcodec.msmq",
        "mqcodec.capture",
        "mqcodec.batch",
        "mqcodec.convert",
        "mqcodec._ext",
        "mqcodec.spark",
    ],
    package_data={"mqcodec": ["py.typed"], "mqcodec._ext": ["*.pyx", "*.pxi", "*.pxd", "*.pyi"]},
    # cythonize writes _ext/*.c / *.cpp next to the sources: never ship them
    exclude_package_data={"mqcodec._ext": ["*.c", "*.cpp"]},
    ext_modules=extensions(),
    cmdclass={"build_ext": OptionalBuildExt},
)
