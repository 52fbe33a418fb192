# One venv per checkout: tui/ and collectors/ are generic import names (DESIGN §1).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# Two stamps: `make demo` installs what the dashboard needs, `make test` adds the test and
# lint tools on top, and neither reinstalls what the other already put there.
RUNTIME := $(VENV)/.installed-runtime
TESTING := $(VENV)/.installed-test

.PHONY: demo test lint typecheck bench screenshots man clean

$(PY):
	python3 -m venv $(VENV)

$(RUNTIME): pyproject.toml | $(PY)
	@echo "fabtop: setting up $(VENV) (runtime dependencies, about 80 MB)..."
	$(PIP) install --progress-bar on -e .
	touch $@

$(TESTING): $(RUNTIME)
	@echo "fabtop: adding the test and lint tools to $(VENV) (about 120 MB)..."
	$(PIP) install --progress-bar on -e '.[test,nvml]'
	touch $@

demo: $(RUNTIME)
	$(VENV)/bin/fabtop --demo

test: $(TESTING)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	PY=$(PY) sh tests/run.sh

lint: $(TESTING)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(TESTING)
	$(PY) -m mypy

bench: $(TESTING)
	$(PY) benchmarks/run_all.py

screenshots: $(TESTING)
	$(PY) tui/screenshots.py screenshots

# The man page comes from the parsers themselves (fabtop.commands.cli.man_parser); the
# date is the last commit's, so the page changes only when the command line does.
MAN_OUT ?= docs/fabtop.1
man: | $(TESTING)
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) COLUMNS=80 \
	$(VENV)/bin/argparse-manpage --module fabtop.commands.cli --function man_parser \
	    $(MAN_ARGS) --output $(MAN_OUT)

MAN_ARGS = --prog fabtop --project-name fabtop --version $$($(PY) -c 'import fabtop; print(fabtop.__version__)') \
    --description "terminal dashboard for the RDMA fabric of small GPU clusters" \
    --manual-title "fabtop manual"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
