"""Packaging: what an sdist carries, what a wheel built FROM that sdist
carries, the MQCODEC_REQUIRE_EXT switch, the cibuildwheel and license
metadata (docs/packaging.md).

The tests marked ``packaging`` run real builds in a temporary directory (the
first one cythonizes and compiles the whole core, with MQCODEC_OPT_LEVEL=0 to
keep it near a minute); deselect them with ``-m 'not packaging'``.  The build
runs without isolation, with the build requirements the ``test`` extra
installs (build, setuptools>=77, Cython, numpy): no network.
"""
from __future__ import annotations

import fnmatch
import hashlib
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "_ext"
PYX = sorted(p.stem for p in EXT.glob("*.pyx"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CIBW = PYPROJECT["tool"]["cibuildwheel"]

# md5 of https://www.apache.org/licenses/LICENSE-2.0.txt, the text every Apache-2.0
# project ships (the same digest license scanners such as licensee match on)
APACHE_2_0_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"

LICENSE_DEPRECATION = re.compile(r"(?i)licen[cs]e[^\n]*deprecat|deprecat[^\n]*licen[cs]e")


def build_env(**extra: str) -> dict:
    """The environment of a build subprocess: no MQCODEC_* switch inherited
    from the caller, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQCODEC_")}
    env.update(extra)
    return env


def run(cmd, cwd, env, timeout=900):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# --- 1. sdist -> wheel --------------------------------------------------------------------

@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """``python -m build`` on the checkout: an sdist, then a wheel built from
    that sdist (build's default), with the core required and compiled -O0."""
    out = tmp_path_factory.mktemp("dist")
    proc = run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
               cwd=out, env=build_env(MQCODEC_REQUIRE_EXT="1", MQCODEC_OPT_LEVEL="0"))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    (sdist,) = out.glob("mqcodec-*.tar.gz")
    (wheel,) = out.glob("mqcodec-*.whl")
    return sdist, wheel, log


@pytest.mark.packaging
def test_wheel_is_built_from_the_sdist(dists):
    _, _, log = dists
    assert "Building wheel from sdist" in log


@pytest.mark.packaging
def test_sdist_has_every_source_the_build_needs(dists):
    sdist, _, _ = dists
    with tarfile.open(sdist) as tf:
        top = tf.getnames()[0].split("/")[0]
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    needed = {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"}
    for pattern in ("*.pyx", "*.pxi", "*.pxd", "*.py"):
        needed |= {p.relative_to(ROOT).as_posix() for p in EXT.glob(pattern)}
    for pkg in ("codec", "spark"):
        needed |= {p.relative_to(ROOT).as_posix() for p in (ROOT / pkg).rglob("*.py")
                   if "__pycache__" not in p.parts}
    assert needed - names == set(), top
    assert any(n.endswith(".pxi") for n in names)  # the include files the sdist once lacked
    built = sorted(n for n in names if n.endswith((".c", ".cpp", ".so", ".pyd", ".pyc")))
    assert built == []


@pytest.mark.packaging
def test_wheel_from_sdist_has_every_compiled_module_and_no_generated_c(dists):
    _, wheel, _ = dists
    names = zipfile.ZipFile(wheel).namelist()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    missing = [m for m in PYX if "mqcodec/_ext/%s%s" % (m, suffix) not in names]
    assert PYX and missing == []
    assert [n for n in names if n.endswith((".c", ".cpp"))] == []
    # a platform wheel (manylinux tags come from cibuildwheel's auditwheel repair)
    assert not wheel.name.endswith("-none-any.whl")


@pytest.mark.packaging
def test_wheel_metadata_license(dists):
    _, wheel, _ = dists
    zf = zipfile.ZipFile(wheel)
    info = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    meta = zf.read(info + "/METADATA").decode()
    assert "License-Expression: Apache-2.0" in meta.splitlines()
    assert "License-File: LICENSE" in meta.splitlines()
    assert not any(line.startswith("License:") for line in meta.splitlines())
    assert zf.read(info + "/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()


@pytest.mark.packaging
def test_build_log_has_no_license_deprecation_nor_skipped_module(dists):
    _, _, log = dists
    assert LICENSE_DEPRECATION.search(log) is None, LICENSE_DEPRECATION.search(log).group(0)
    assert "mqcodec: WARNING" not in log
    assert "-O0" in log  # MQCODEC_OPT_LEVEL reached the compiler


def wheel_venv(wheel: Path, where: Path) -> dict:
    """A fresh venv with ``wheel`` unpacked into its site-packages and this
    environment's packages (numpy, pyarrow, ...) behind it through a .pth
    line -- which does not run this environment's .pth files, so an editable
    mqcodec here stays out.  Returns the environment to run ``python`` in."""
    import sysconfig

    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    zipfile.ZipFile(wheel).extractall(site)
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site / "zz_test_deps.pth").write_text("".join(d + "\n" for d in sorted(deps)))
    return build_env(PATH=str(venv / "bin") + os.pathsep + os.environ.get("PATH", ""))


@pytest.mark.packaging
def test_cibuildwheel_test_command_passes_on_the_wheel(dists, tmp_path):
    """The configured test-command, run as cibuildwheel does (`python` of a
    venv the wheel is installed in, outside the checkout): the compiled
    modules import and the front door picks them."""
    _, wheel, _ = dists
    env = wheel_venv(wheel, tmp_path)
    where = run(["python", "-c", "import mqcodec; print(mqcodec.__file__)"], tmp_path, env)
    assert str(tmp_path / "venv") in where.stdout, where.stdout + where.stderr
    cmd = CIBW["test-command"]
    proc = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # and it can fail: without one compiled module the same command fails
    (victim,) = Path(where.stdout.strip()).parent.glob("_ext/%s.*.so" % PYX[0])
    victim.unlink()
    proc = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and PYX[0] in proc.stderr


# --- 2. MQCODEC_REQUIRE_EXT ----------------------------------------------------------------

GOOD_PYX = "def answer():\n    return 42\n"
BAD_CYTHON_PYX = "def broken(:\n    pass\n"                     # not Cython: cythonize fails
BAD_C_PYX = '''cdef extern from *:
    """
    #error mqcodec test: this module must not compile
    """
    int mqcodec_never_defined

def broken():
    return mqcodec_never_defined
'''                                                              # cythonizes, the C compiler fails


def project_copy(tmp_path: Path, modules: dict[str, str]) -> Path:
    """The build files and Python packages of the checkout, with ``modules``
    (name -> Cython source) as the only ``_ext/*.pyx``."""
    dst = tmp_path / "src"
    dst.mkdir()
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, dst / name)
    for pkg in ("codec", "spark"):
        shutil.copytree(ROOT / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (dst / "_ext").mkdir()
    shutil.copy2(EXT / "__init__.py", dst / "_ext" / "__init__.py")
    for name, text in modules.items():
        (dst / "_ext" / (name + ".pyx")).write_text(text)
    return dst


def build_ext(src: Path, **env: str):
    proc = run([sys.executable, "setup.py", "build_ext", "--inplace"], src,
               build_env(MQCODEC_OPT_LEVEL="0", **env), timeout=600)
    built = sorted(p.name.split(".")[0] for p in (src / "_ext").glob("*" + importlib.machinery.EXTENSION_SUFFIXES[0]))
    return proc, built


@pytest.mark.packaging
def test_require_ext_builds_a_good_module(tmp_path):
    """The control: the switch does not fail a build that works."""
    src = project_copy(tmp_path, {"good": GOOD_PYX})
    proc, built = build_ext(src, MQCODEC_REQUIRE_EXT="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert built == ["good"]
    check = run([sys.executable, "-c", "import good; print(good.answer())"], src / "_ext", build_env())
    assert check.stdout.strip() == "42"


@pytest.mark.packaging
@pytest.mark.parametrize("source, stage", [(BAD_CYTHON_PYX, "did not cythonize"),
                                           (BAD_C_PYX, "did not compile")],
                         ids=["cythonize", "compile"])
def test_require_ext_turns_a_broken_module_into_an_error(tmp_path, source, stage):
    src = project_copy(tmp_path, {"good": GOOD_PYX, "broken": source})
    proc, built = build_ext(src, MQCODEC_REQUIRE_EXT="1")
    assert proc.returncode != 0
    assert "mqcodec._ext.broken %s" % stage in proc.stderr
    assert "MQCODEC_REQUIRE_EXT=1 makes this an error" in proc.stderr
    assert "broken" not in built


@pytest.mark.packaging
@pytest.mark.parametrize("source, stage", [(BAD_CYTHON_PYX, "did not cythonize"),
                                           (BAD_C_PYX, "did not compile")],
                         ids=["cythonize", "compile"])
def test_without_require_ext_a_broken_module_is_skipped_with_a_warning(tmp_path, source, stage):
    src = project_copy(tmp_path, {"good": GOOD_PYX, "broken": source})
    proc, built = build_ext(src)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert built == ["good"]  # the other module still builds
    assert "mqcodec: WARNING: mqcodec._ext.broken %s" % stage in proc.stderr


@pytest.mark.packaging
@pytest.mark.parametrize("require", ["1", ""])
def test_missing_cython(tmp_path, require):
    """A Cython that cannot be imported (an empty package shadows it): an
    error with the switch, the pure-Python fallback without."""
    src = project_copy(tmp_path, {"good": GOOD_PYX})
    shadow = tmp_path / "shadow"
    (shadow / "Cython").mkdir(parents=True)
    (shadow / "Cython" / "__init__.py").write_text("")
    proc, built = build_ext(src, MQCODEC_REQUIRE_EXT=require, PYTHONPATH=str(shadow))
    assert built == []
    assert "Cython and numpy are needed" in proc.stderr
    if require:
        assert proc.returncode != 0
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "the pure-Python implementation will be used" in proc.stderr


@pytest.mark.packaging
def test_require_ext_with_no_pyx_fails(tmp_path):
    """An sdist that lost its Cython sources no longer installs silently."""
    src = project_copy(tmp_path, {})
    proc, _ = build_ext(src, MQCODEC_REQUIRE_EXT="1")
    assert proc.returncode != 0 and "no _ext/*.pyx" in proc.stderr
    proc, _ = build_ext(src)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_pure_and_require_contradict(tmp_path):
    proc = run([sys.executable, str(ROOT / "setup.py"), "--name"], ROOT,
               build_env(MQCODEC_PURE="1", MQCODEC_REQUIRE_EXT="1"))
    assert proc.returncode != 0 and "contradict" in proc.stderr
    proc = run([sys.executable, str(ROOT / "setup.py"), "--name"], ROOT, build_env(MQCODEC_PURE="1"))
    assert proc.returncode == 0 and proc.stdout.strip().endswith("mqcodec"), proc.stderr


@pytest.mark.parametrize("var, value", [("MQCODEC_REQUIRE_EXT", "yes"), ("MQCODEC_OPT_LEVEL", "-O3")])
def test_switch_values_are_checked(var, value):
    proc = run([sys.executable, str(ROOT / "setup.py"), "--name"], ROOT, build_env(**{var: value}))
    assert proc.returncode != 0 and var in proc.stderr


def test_make_setup_requires_the_extension():
    """`make setup` installs with MQCODEC_REQUIRE_EXT=1 (make -n: print, run nothing)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    proc = run(["make", "-n", "-B", ".venv/.installed"], ROOT, build_env())
    assert proc.returncode == 0, proc.stderr
    installs = [line for line in proc.stdout.splitlines() if "pip install" in line and "-e" in line]
    assert installs and all("MQCODEC_REQUIRE_EXT=1" in line for line in installs)


# --- 3. cibuildwheel -------------------------------------------------------------------------

def _selected(identifier: str) -> bool:
    """cibuildwheel's selection: matches a ``build`` pattern and no ``skip`` one."""
    def patterns(value):
        return value.split() if isinstance(value, str) else list(value)
    return (any(fnmatch.fnmatch(identifier, p) for p in patterns(CIBW["build"]))
            and not any(fnmatch.fnmatch(identifier, p) for p in patterns(CIBW.get("skip", ""))))


@pytest.mark.parametrize("identifier, wanted", [
    ("cp310-manylinux_x86_64", True),
    ("cp312-manylinux_x86_64", True),
    ("cp313-manylinux_aarch64", True),
    ("cp314-manylinux_aarch64", True),
    ("cp313t-manylinux_x86_64", False),   # free-threaded
    ("cp311-musllinux_x86_64", False),
    ("pp310-manylinux_x86_64", False),
    ("cp312-manylinux_i686", False),
    ("cp312-win_amd64", False),
])
def test_cibuildwheel_selection(identifier, wanted):
    assert _selected(identifier) is wanted


def test_cibuildwheel_config():
    assert PYPROJECT["project"]["requires-python"] == ">=3.10"  # cibuildwheel builds no older CPython
    assert set(CIBW["linux"]["archs"]) == {"x86_64", "aarch64"}
    assert CIBW["environment"]["MQCODEC_REQUIRE_EXT"] == "1"
    assert CIBW["manylinux-x86_64-image"].startswith("manylinux")
    assert CIBW["manylinux-aarch64-image"].startswith("manylinux")
    # the test-command imports every compiled module there is
    assert [m for m in PYX if "'%s'" % m not in CIBW["test-command"]] == []


# --- 4. license and dependency metadata ----------------------------------------------------------

def test_license_file_is_the_apache_2_0_text():
    assert hashlib.md5((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_0_MD5


def test_license_metadata_is_spdx():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))
    setuptools_req = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools_req == ["setuptools>=77"]  # the first setuptools with PEP 639 license strings


def test_spark_extra_admits_the_tested_versions_and_the_4x_line():
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    reqs = {Requirement(r).name: Requirement(r).specifier for r in PYPROJECT["project"]["optional-dependencies"]["spark"]}
    assert "==" not in str(reqs["pyspark"])
    for v in ("4.0.0", "4.1.4", "4.2.0", "4.3.0", "4.9.9"):
        assert reqs["pyspark"].contains(v)
    for v in ("3.5.9", "5.0.0"):
        assert not reqs["pyspark"].contains(v)
    for dist in ("pyspark", "pandas"):   # what this environment tests with is allowed
        try:
            assert reqs[dist].contains(version(dist)), (dist, version(dist))
        except PackageNotFoundError:
            pass
