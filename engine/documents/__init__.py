"""Judging long documents: pairs of documents from their window vectors, and MinHash near-copies."""
