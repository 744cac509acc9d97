"""tanglenode: storage."""
