"""The Spark pipeline over exported archives: verify, linearize, audit (docs/PIPELINE.md)."""
