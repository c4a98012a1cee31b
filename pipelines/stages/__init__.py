"""The streaming stages, record -> alert's middle: `sources` (Kafka, dumps, logs) -> `ingest` (bronze/silver) ->
`detect` (gold), on the skeleton of `streams`, with the clock, the source gaps and the detection turn beside them."""

__all__ = ["clock", "detect", "detection_turn", "ingest", "source_gaps", "sources", "streams"]
