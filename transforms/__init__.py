"""Pure logic, no I/O: bytes and rows in, rows out."""
