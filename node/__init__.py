"""tanglenode: node."""
