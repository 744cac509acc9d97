# tanglenode — the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what it needs into .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test test-slow demo lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "tanglenode needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,pipeline]'
	@touch $@

test: install
	$(PY) -m pytest -m "not slow" -q

test-slow: install
	$(PY) -m pytest -m slow -q

demo: install
	$(PY) -m node.demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: install
	$(PY) bench/ingest.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
