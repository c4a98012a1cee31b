"""Embedded single-node Kafka broker, broker-log shipper and demo scenarios for a laptop or CI."""
