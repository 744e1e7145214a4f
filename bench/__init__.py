"""Benchmarks, kept apart from the tests: `scripts/bench.sh [NAME]` runs them."""
