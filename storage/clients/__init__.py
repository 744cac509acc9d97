"""Clients of the composed store: backup bundles, editing-trace replay. Never imported by the
layers below.
"""
