# The two commands of the README.  Each sets up a fresh machine by itself:
# Debian packages (tshark, graphviz, Java 17 for Spark, libicu-dev + pkg-config
# to build PyICU, the CCSID converters of mqcodec.ccsid) when missing, then a
# virtualenv in .venv with mqcodec installed editable (building the Cython
# core) with its test and Spark dependencies.
#
#   make run    - the main job on its embedded default: simulate a capture, convert it
#                 (and the shared real capture) to Parquet through Spark on local[*]
#   make test   - run every test (this is what .ci/run calls)
#   make bench  - the benchmark suite (figures in BENCHMARKS.md)

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
SHARED  ?= ../shared
OUT     ?= out
MESSAGES ?= 2000

.PHONY: run test setup system-deps bench clean fuzz-instrumented

setup: system-deps $(VENV)/.installed

system-deps:
	@missing=""; \
	command -v tshark >/dev/null 2>&1 || missing="$$missing tshark"; \
	command -v dot    >/dev/null 2>&1 || missing="$$missing graphviz"; \
	command -v java   >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	pkg-config --exists icu-uc 2>/dev/null || missing="$$missing libicu-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | $$SUDO debconf-set-selections; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# MQCODEC_REQUIRE_EXT=1: a Cython core that does not build fails the setup instead of
# falling back to the pure-Python implementation, so CI never tests only the pure path
# editable_mode=strict links each module file: a module added to codec/, spark/ or _ext/
# appears after the next install, so every source file is a prerequisite
$(VENV)/.installed: pyproject.toml setup.py $(wildcard _ext/*.pyx _ext/*.pxd _ext/*.pxi _ext/*.pyi) \
                    $(shell find codec spark _ext -name '*.py' 2>/dev/null)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	MQCODEC_REQUIRE_EXT=1 $(PY) -m pip install -q -e '.[test,spark]' --config-settings editable_mode=strict
	touch $@

run: setup
	mkdir -p $(OUT)
	$(PY) -m mqcodec synth -o $(OUT)/sample.pcap --seed 1 --messages $(MESSAGES)
	$(PY) -m mqcodec pcap2parquet $(OUT)/sample.pcap $(wildcard $(SHARED)/captures/*.pcap) \
	    -o $(OUT)/parquet --engine spark --master "local[*]"

# two workers (one per core here; at most 4 elsewhere), the tests of Spark together on one of
# them (tests/conftest.py: --dist loadgroup)
test: setup
	$(PY) -m pytest -q -p no:cacheprovider -n auto --maxprocesses 4 --dist loadgroup tests

bench: setup
	$(PY) -m pytest -q benchmarks --benchmark-only

# coverage-instrumented (clang, ASan + libFuzzer) builds of the Cython modules for the
# atheris campaigns of docs/ROBUSTNESS.md; needs clang, never part of `make test`
FUZZBUILD ?= /tmp/mqcodec-fuzzbuild
fuzz-instrumented:
	tests/fuzz/build_instrumented.sh $(FUZZBUILD)

clean:
	rm -rf $(VENV) build *.egg-info _ext/*.c _ext/*.cpp _ext/*.so $(OUT)
