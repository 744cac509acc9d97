"""The feed store's own tables and rules: the stored form, heads, ingest (`BatchWriter`), proofs
and invalid feeds, the causal processor, replication walks, new timeframes, the derived-view
interface the writes call, and `check` of the feeds' tables. Imports `storage.engine` and
`storage.errors`.
"""
