"""Build script: maps the design card's folders onto the import package and
builds the optional Cython core.

    codec/   -> mqcodec         (pure Python, always installed)
    _ext/    -> mqcodec._ext    (Cython; optional, see MQCODEC_PURE)
    spark/   -> mqcodec.spark   (PySpark adapter)

If no C compiler or no Cython is available the extension build is skipped with
a warning and the pure-Python package still installs and works.
"""
import glob
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build the Cython core when possible; never fail the install for it."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # pragma: no cover - depends on the machine
            self._skip(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # pragma: no cover - depends on the machine
            self._skip(exc)

    @staticmethod
    def _skip(exc):
        sys.stderr.write(
            "mqcodec: the Cython core was not built (%s); the pure-Python "
            "implementation will be used.\n" % (exc,)
        )


def extensions():
    if os.environ.get("MQCODEC_PURE") == "1":
        return []
    sources = sorted(glob.glob(os.path.join("_ext", "*.pyx")))
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
        import numpy
    except ImportError:  # pragma: no cover
        sys.stderr.write("mqcodec: Cython/numpy missing, building pure Python only\n")
        return []
    from setuptools import Extension

    exts = [
        Extension(
            "mqcodec._ext." + os.path.splitext(os.path.basename(src))[0],
            [src],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O3"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
        for src in sources
    ]
    directives = {
        "language_level": 3,
        "boundscheck": False,
        "wraparound": False,
        "cdivision": True,
    }
    built = []
    for ext in exts:  # one at a time: a module that fails to cythonize is skipped, not the install
        try:
            built.extend(cythonize([ext], compiler_directives=directives))
        except Exception as exc:  # pragma: no cover - depends on the source tree
            sys.stderr.write("mqcodec: skipping %s, which did not cythonize (%s); its pure-Python "
                             "twin will be used\n" % (ext.name, exc))
    return built


setup(
    package_dir={
        "mqcodec": "codec",
        "mqcodec._ext": "_ext",
        "mqcodec.spark": "spark",
    },
    packages=[
        "mqcodec",
        "mqcodec.ibmmq",
        "mqcodec.msmq",
        "mqcodec.capture",
        "mqcodec.batch",
        "mqcodec._ext",
        "mqcodec.spark",
    ],
    package_data={"mqcodec": ["py.typed"], "mqcodec._ext": ["*.pyx", "*.pxd", "*.pyi"]},
    ext_modules=extensions(),
    cmdclass={"build_ext": OptionalBuildExt},
)
