"""tanglenode: config."""
