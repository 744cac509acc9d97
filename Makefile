# tanglenode — the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what it needs into .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install native test test-slow demo lint bench man clean systemd-tools java-runtime \
        browser screenshots

install: $(STAMP) native java-runtime

# The timeline engine's hot modules, compiled from their pure-Python sources with
# Cython and gcc (storage/native.py); the engine runs the plain modules if this fails.
NATIVE_SOURCES := $(wildcard storage/ordertree.py storage/ordertree.pxd storage/engine_core.py storage/engine_core.pxd)
NATIVE_STAMP   := $(VENV)/.native

native: $(NATIVE_STAMP)

$(NATIVE_STAMP): $(STAMP) $(NATIVE_SOURCES) storage/native.py storage/native_build.py
	@$(PY) -m tanglenode.storage.native_build && touch $@ || \
	  echo "note: no compiled engine (no Cython or no C compiler); the timeline engine runs plain"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "tanglenode needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,pipeline]'
	@touch $@

test: install systemd-tools browser
	$(PY) -m pytest -m "not slow" -q

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

# `tangled pipeline` runs Spark, which needs a Java 17+ runtime: part of `install` (and so of
# `test`), since the command needs it as much as its tests do. Debian's headless JRE 17.
java-runtime:
	@java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' || \
	  (command -v apt-get >/dev/null 2>&1 && \
	   (apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1 || \
	    (apt-get update -qq >/dev/null 2>&1 && \
	     apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1))) || \
	  echo "note: no Java 17+ runtime; \`tangled pipeline\` and its tests need one (Spark)"

test-slow: install browser
	$(PY) -m pytest -m slow -q

# `make demo KEEP=1` keeps the four nodes' data directories to explore afterwards.
demo: install
	$(PY) -m tanglenode.node.localnet.demo $(if $(filter-out 0,$(KEEP)),--keep)

# docs/img/tangle-view.png and docs/img/document-view.png: two real nodes hold a small
# conversation and edit a document, and headless Chromium photographs the two pages.
screenshots: install browser
	$(PY) -m tests.browser.screenshots

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: install
	$(PY) bench/ingest.py

# The man page, generated from the CLI (node/cli/manpage.py); a test checks it is fresh.
man: install
	$(PY) -m tanglenode.node.cli.manpage > docs/tangled.1

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info storage/__pycache__/*_native.*.so
