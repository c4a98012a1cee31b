"""The local stack for a laptop or CI: the embedded single-node Kafka broker (`broker`), the broker-side set-up a
fresh broker needs (`topics`), and demo data."""

__all__ = ["broker", "scenarios", "topics"]
