"""Pure logic, no I/O: bytes and rows in, rows out.

`schemas` declares every table, column and routed-batch shape once; `wire/` is the Kafka codec; `offsets_batch`
routes `__consumer_offsets` records into silver rows and `telemetry/` parses telemetry into heartbeat events (both
run inside Spark's mapInArrow); `detectors/` holds the detection rules.
"""
