"""Entry points and I/O: everything that touches Kafka, Delta, Spark sessions and config, in rooms.

A record's path to an alert (docs/ARCHITECTURE.md draws it): `cli` (the `radar` commands and their compositions)
starts the `stages` (sources -> ingest -> detect) in the session `runtime` builds; they write the Delta tables of
`storage`; `checks` turns the tables into alerts. `formats` reads and writes dumps and log files; `local` is the
embedded broker and its demo scenarios; `config` (this folder's one module) is read by every room.

Rooms import only the rooms below them: config <- runtime <- storage <- stages <- checks <- cli; `formats` (config
only) serves stages, local and cli; `local` serves cli. Each room's `__init__` names what the others use from it
and imports nothing heavy.
"""
