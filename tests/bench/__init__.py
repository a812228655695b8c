"""Benchmarks on the tests' own harnesses (mocks, the entrypoint under bash with stand-ins):
run with `venv/bin/python -m tests.bench.sizes` and `-m tests.bench.stop`; scripts/ holds only users' tools."""
