"""Tooling around the store: the simulated workloads of the benches, the native build of the
engine's hot modules.
"""
