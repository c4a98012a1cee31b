"""Stateful detectors and their rules: pure Python, no Spark, one tracker per (cluster, group_id).

The path of an event: `group_events` (a DETECTOR_INPUT row -> `GroupEvent`) -> `tracker.GroupTracker` (the
time model: events in event order, deadlines in between) -> the group's protocol class in `groups/` (classic,
consumer, streams, share: keeps the group's state, `state.py`, and says what changed as `facts.py` facts) -> the
rules in `rules/` (one class per detection kind, found through `rules.RULES`: each opens and resolves its own
detections in the `DetectionBook`, `detections.py`) -> changed rebalance, detection and health rows.

- `thresholds`: `DetectorThresholds` (the defaults; the conf's `detect.thresholds` overrides them, at load).
- `state`: what a group's tracker remembers, typed; `snapshot`: the versioned snapshot and its migrations.
- `membership`: which (former) member a telemetry event is about.
- `causes`: the one `RebalanceCause` of a rebalance.
- `evidence`: source references, `stable_id`, summary wording helpers.
- `rules/`: `Rule` (kind, severity, thresholds, facts it reacts to, deadlines, how it resolves: `Rule.resolves`).
"""
