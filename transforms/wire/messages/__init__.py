"""Message definitions as data, one module per family."""
