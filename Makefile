# Benchmarks: `make bench` runs every script in bench/ and writes bench/RESULTS.md.
# Needs the bench extra: pip install -e '.[bench]'
PYTHON ?= python3

.PHONY: bench bench-quick

bench:
	$(PYTHON) bench/run_all.py

bench-quick:
	$(PYTHON) bench/run_all.py --quick --out /tmp/nbagent-RESULTS.md
