# The two commands of the README.  Each sets up a fresh machine by itself:
# Debian packages (tshark, graphviz) when missing, then a virtualenv in .venv
# with mqcodec installed editable (building the Cython core) and its test deps.
#
#   make demo   - run the main job on the embedded default
#   make test   - run every test (this is what .ci/run calls)

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
APT_PKGS := tshark graphviz
SHARED  ?= ../shared

.PHONY: demo test setup system-deps bench clean

setup: system-deps $(VENV)/.installed

system-deps:
	@missing=""; \
	command -v tshark >/dev/null 2>&1 || missing="$$missing tshark"; \
	command -v dot    >/dev/null 2>&1 || missing="$$missing graphviz"; \
	command -v java   >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | $$SUDO debconf-set-selections; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(VENV)/.installed: pyproject.toml setup.py $(wildcard _ext/*.pyx) $(wildcard _ext/*.pxd)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $@

demo: setup
	$(PY) -m mqcodec demo --shared $(SHARED)

test: setup
	$(PY) -m pytest -q -p no:cacheprovider tests

bench: setup
	$(PY) -m pytest -q benchmarks --benchmark-only

clean:
	rm -rf $(VENV) build *.egg-info _ext/*.c _ext/*.so
