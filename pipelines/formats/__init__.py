"""The files radar reads and writes besides tables: the dump format (`dump`, its vectorised reader `dump_columns`),
log files replayed as telemetry, `radar decode` (`dump_json`) and `radar capture`."""

__all__ = ["capture", "dump", "dump_columns", "dump_json", "log_files"]
