"""Derived views computed from the stored messages (docs/ARCHITECTURE.md, 'Derived views'):
timelines, their causal-time twins, tangles' joined views and tips, the names feeds give
themselves, timelines' digests. Imports `storage.feeds`, `storage.engine`.
"""
