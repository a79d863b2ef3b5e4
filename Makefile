# make test: the test suite; make lint: ruff and mypy --strict; make bench: every benchmark into bench/RESULTS.md.
# The test and bench extras install what these need: pip install -e '.[test,bench]'
PYTHON ?= python3

.PHONY: test lint bench bench-quick

test:
	$(PYTHON) -m pytest

lint:
	$(PYTHON) -m ruff check src tests bench
	$(PYTHON) -m ruff format --check src tests bench
	$(PYTHON) -m mypy

bench:
	$(PYTHON) bench/run_all.py

bench-quick:
	$(PYTHON) bench/run_all.py --quick --out /tmp/nbagent-RESULTS.md
