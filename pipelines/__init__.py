"""Entry points and I/O: everything that touches Kafka, Delta, Spark sessions and config.

`cli` parses commands; `streams` is the streaming skeleton (queries, triggers, multi-table idempotent writes,
stages); `ingest` is the source -> bronze/silver stage; `tables` names, creates and writes the Delta tables;
`dump_json` is `radar decode`; `local/` is the embedded broker and its set-up.
"""
