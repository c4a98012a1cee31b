"""The process radar runs in: its one SparkSession (`session`; `local_runtime` for a local master only), the JVM
artifacts (`jvm`), what it prints (`console`), its run status file and its timed phases."""

__all__ = ["console", "jvm", "phases", "run_status", "session"]
