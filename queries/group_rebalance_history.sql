-- Question: what happened to this consumer group? Every rebalance, newest first, with its cause and the members
-- that joined, left or expired.
-- Parameters: group_id
SELECT
  cluster,
  group_id,
  group_protocol,
  from_generation,
  generation,
  started_at,
  stabilized_at,
  duration_ms,
  members_before,
  members_after,
  cause,
  cause_detail,
  joined,
  `left`,
  expired,
  leader
FROM rebalances
WHERE group_id = :group_id
ORDER BY started_at DESC, from_generation DESC
