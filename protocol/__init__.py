"""tanglenode: protocol."""
