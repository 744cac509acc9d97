"""The timeline engine: incremental ScuttleSort in LMDB (ranks, the order tree, command logs), its
causal-time twin, and the compiled build of its hot modules. Imports nothing of storage but
`storage.errors`.
"""
