"""Kafka binary codec: primitives, message definitions as data, one reader and one writer.

`coordinator_records.decode_record` is the one front door for `__consumer_offsets` records (key, value, tombstone,
failures as data); `json_form` renders its result in Kafka's JSON conventions.
"""
