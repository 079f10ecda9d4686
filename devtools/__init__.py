"""Helpers for the tests and the benchmarks that are not part of the product (not shipped:
pyproject's package list names engine and desktop_app only)."""
