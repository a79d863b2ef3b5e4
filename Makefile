# make test: the test suite; make test-fast: its fast tier (no test starts a child process; three workers; docs/testing.md);
# make soak: the kill-point tests at every file operation (scheduled, not in make test);
# make lint: ruff and mypy --strict; make bench: every benchmark into bench/RESULTS.md, the loop's, Stop/Pause's
# and the import's figures appended to bench/history.jsonl with their change since the last run (bench/history.py);
# make bench-against COMMIT=e22d83f: bench_loop.py on this tree against that commit, alternating (bench/against.py).
# The test and bench extras install what these need: pip install -e '.[test,bench]'
PYTHON ?= python3

.PHONY: test test-fast soak lint bench bench-quick bench-against

test:
	$(PYTHON) -m pytest

test-fast:
	$(PYTHON) -m pytest -m "not slow"

soak:
	NBAGENT_SOAK=1 $(PYTHON) -m pytest -m killpoints -p no:xdist

lint:
	$(PYTHON) -m ruff check src tests bench
	$(PYTHON) -m ruff format --check src tests bench
	$(PYTHON) -m mypy

bench:
	$(PYTHON) bench/run_all.py

bench-quick:
	$(PYTHON) bench/run_all.py --quick --no-history --out /tmp/nbagent-RESULTS.md

COMMIT ?= e22d83f
bench-against:
	$(PYTHON) bench/against.py $(COMMIT) --rounds 7
