-- Question: which members were removed from their group in the last hour because their session expired, and where
-- do they run? The hour ends at the monitor's clock (its newest clock tick: `radar run` ticks every second, a replay
-- ends at the end of its dump), so a replayed incident reads as it did live.
WITH monitor_clock AS (
  SELECT max(tick_time) AS now FROM clock_ticks
),
expirations AS (
  SELECT cluster, group_id, explode(expired) AS member_id, from_generation, generation, started_at, stabilized_at
  FROM rebalances
),
member_hosts AS (
  SELECT cluster, group_id, m.member_id, m.client_id, regexp_replace(m.client_host, '^/', '') AS client_host
  FROM group_metadata LATERAL VIEW explode(members) listed AS m
  UNION
  SELECT
    cluster,
    group_id,
    member_id,
    get_json_object(payload, '$.clientId') AS client_id,
    regexp_replace(get_json_object(payload, '$.clientHost'), '^/', '') AS client_host
  FROM group_records
  WHERE record_type = 'ConsumerGroupMemberMetadata' AND NOT is_tombstone
)
SELECT
  e.cluster,
  e.group_id,
  e.member_id,
  first(h.client_id, true) AS client_id,
  first(h.client_host, true) AS client_host,
  e.from_generation,
  e.generation,
  e.started_at AS expired_at,
  e.stabilized_at
FROM expirations AS e
CROSS JOIN monitor_clock AS c
LEFT JOIN member_hosts AS h
  ON h.cluster = e.cluster AND h.group_id = e.group_id AND h.member_id = e.member_id
WHERE e.started_at > c.now - INTERVAL 1 HOUR
GROUP BY e.cluster, e.group_id, e.member_id, e.from_generation, e.generation, e.started_at, e.stabilized_at
ORDER BY expired_at DESC, e.group_id, e.member_id
