# tanglenode — the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what it needs into .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DAEMON_STAMP := $(VENV)/.installed-daemon
# Where `install` puts the man page: $(PREFIX)/share/man/man1/tangled.1. By default the
# venv, where `man tangled` finds it while .venv/bin is on PATH; `PREFIX=/usr/local` for
# everyone (and for the systemd unit's Documentation=man:tangled(1)).
PREFIX ?= $(VENV)
MAN1DIR := $(PREFIX)/share/man/man1
JAVA_OK := java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'

.PHONY: install install-daemon install-man native test test-slow demo lint bench man clean \
        systemd-tools java-runtime browser screenshots

# Everything but Java: the CLI and daemon, the test and bench tools, the pipeline's Python
# packages, the compiled engine, the man page. `make java-runtime` adds Java for
# `tangled pipeline` (`make test` does it too).
install: $(STAMP) native install-man
	@$(if $(filter test test-slow java-runtime,$(MAKECMDGOALS)),true,$(JAVA_OK)) || \
	  echo "note: no Java 17+ runtime; \`tangled pipeline\` (Spark) needs one: make java-runtime"

# A daemon-only server: the node, its CLI, the compiled engine and the man page; no test
# tools, no Spark, no Java.
install-daemon: $(DAEMON_STAMP)
	@$(MAKE) --no-print-directory native install-man BUILT=$(DAEMON_STAMP)

install-man:
	install -d $(MAN1DIR)
	install -m 644 docs/tangled.1 $(MAN1DIR)/tangled.1

# The timeline engine's hot modules, compiled from their pure-Python sources with
# Cython and gcc (storage/engine/native.py); the engine runs the plain modules if this fails.
NATIVE_SOURCES := $(wildcard storage/engine/ordertree.py storage/engine/ordertree.pxd storage/engine/engine_core.py storage/engine/engine_core.pxd)
NATIVE_STAMP   := $(VENV)/.native
# The install the engine is compiled in (install-daemon passes its own).
BUILT ?= $(STAMP)

native: $(NATIVE_STAMP)

$(NATIVE_STAMP): $(BUILT) $(NATIVE_SOURCES) storage/engine/native.py storage/tools/native_build.py
	@$(PY) -m tanglenode.storage.tools.native_build && touch $@ || \
	  echo "note: no compiled engine (no Cython or no C compiler); the timeline engine runs plain"

define new-venv
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "tanglenode needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
endef

$(STAMP): pyproject.toml
	$(new-venv)
	$(PY) -m pip install --quiet -e '.[dev,pipeline]'
	@touch $@

# Cython only to compile the engine (the dev extra's tools are not needed to run).
$(DAEMON_STAMP): pyproject.toml
	$(new-venv)
	$(PY) -m pip install --quiet -e . 'cython>=3.0'
	@touch $@

# On two workers (pytest-xdist): each test owns its ports, directories and processes.
test: install java-runtime systemd-tools browser
	$(PY) -m pytest -m "not slow" -q -n auto

# The unit-file tests need systemd-analyze; Debian's systemd package has it.
systemd-tools:
	@command -v systemd-analyze >/dev/null 2>&1 || \
	  (command -v apt-get >/dev/null 2>&1 && \
	   (apt-get install -y -qq systemd >/dev/null 2>&1 || \
	    (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq systemd >/dev/null 2>&1))) || \
	  echo "note: systemd-analyze is unavailable; the unit-file checks will be skipped"

# The browser tests (tests/browser/) drive Debian's Chromium with playwright's Python
# package; playwright's own browser download is never used. Never fails: without
# /usr/bin/chromium those tests are skipped, and say why.
browser:
	@test -x /usr/bin/chromium || \
	  (command -v apt-get >/dev/null 2>&1 && \
	   (apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1))) || \
	  echo "note: no Chromium at /usr/bin/chromium (Debian's chromium); the browser tests will be skipped"

# `tangled pipeline` runs Spark, which needs a Java 17+ runtime: asked for by name (and by
# `test`, since the pipeline's tests need it), never by `install`. Debian's headless JRE 17.
java-runtime:
	@$(JAVA_OK) || \
	  (command -v apt-get >/dev/null 2>&1 && \
	   (apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1 || \
	    (apt-get update -qq >/dev/null 2>&1 && \
	     apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1))) || \
	  echo "note: no Java 17+ runtime; \`tangled pipeline\` and its tests need one (Spark)"

test-slow: install java-runtime browser
	$(PY) -m pytest -m slow -q

# `make demo KEEP=1` keeps the four nodes' data directories to explore afterwards.
demo: install
	$(PY) -m tanglenode.node.localnet.demo $(if $(filter-out 0,$(KEEP)),--keep)

# docs/img/*.png: two real nodes hold small conversations, edit a document and run a group,
# and headless Chromium photographs home, a thread, the tangle, the document, the group and
# the peers pages (tests/browser/screenshots.py).
screenshots: install browser
	$(PY) -m tests.browser.screenshots

# ruff, then mypy over the tanglenode package (tests/typecheck.py, [tool.mypy] in
# pyproject.toml): strict for protocol/ and storage/engine/, a baseline for the rest.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) tests/typecheck.py

bench: install
	$(PY) bench/ingest.py

# The man page, generated from the CLI (node/cli/manpage.py); a test checks it is fresh.
man: install
	$(PY) -m tanglenode.node.cli.manpage > docs/tangled.1

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info storage/engine/__pycache__/*_native.*.so
