"""Duplens benchmarks: each figure measured next to plain sentence-transformers, same run."""
