"""Parsers that turn telemetry records into heartbeat events."""
