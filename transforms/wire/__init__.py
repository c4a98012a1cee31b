"""Kafka binary codec: primitives, message definitions as data, one reader and one writer."""
