# One venv per checkout: tui/ and collectors/ are generic import names (DESIGN §1).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench screenshots clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,nvml]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/fabtop --demo

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -q -ra

lint: $(STAMP)
	$(PY) -m ruff check .

typecheck: $(STAMP)
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

screenshots: $(STAMP)
	$(PY) tui/screenshots.py screenshots

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
