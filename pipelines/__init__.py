"""Entry points and I/O: everything that touches Kafka, Delta, Spark sessions and config."""
