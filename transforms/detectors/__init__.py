"""Stateful detectors and their rules: pure Python, no Spark, one tracker per (cluster, group_id).

Modules:
- `group_events`: `GroupEvent`, `group_event_from_row` (a DETECTOR_INPUT row -> event or None), `event_order`.
- `thresholds`: `DetectorThresholds` (the defaults; the conf's `detect.thresholds` overrides them, at load).
- `state`: what a group's tracker remembers (members, departures, the open rebalance, recent history), as JSON.
- `causes`: the one `RebalanceCause` of a rebalance.
- `detections`: `DetectionBook`, incidents opened/updated/resolved under deterministic ids.
- `evidence`: source references, `stable_id`, summary wording helpers.
- rule families: `heartbeat_rules` (heartbeat_expiration, heartbeat_at_risk), `commit_rules` (zombie_commit,
  offset_regression), `generation_rules` (failing_generation, rebalance_storm, probing_rebalance_loop,
  membership_flapping, leader_instability).
- `tracker`: `GroupTracker` (accept / advance_to / next_wakeup / is_expired / snapshot / restore), `TrackerOutput`.

When each kind resolves:
- failing_generation: group-wide, when a stable generation/epoch is reached (members failing to send SyncGroup:
  when the window holds no such removal); per KIP-848/1071 member, when the member catches up with the target
  assignment or leaves the group.
- heartbeat_expiration: when the group has stabilised without the member (or after `incident_quiet_ms`).
- heartbeat_at_risk: on the member's next heartbeat, or when it leaves the group.
- zombie_commit: after `incident_quiet_ms` without another commit from the zombie.
- offset_regression: when the partition's committed offset passes its earlier high-water mark (or quiet).
- rebalance_storm: when the storm window holds no unplanned rebalance any more.
- probing_rebalance_loop: when no rebalance follows within the probing interval plus tolerance.
- membership_flapping, leader_instability: when their window passes without a new rebalance / leader change.
"""
