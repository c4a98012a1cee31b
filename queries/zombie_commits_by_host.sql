-- Question: which client hosts run zombie consumers, members that still commit after their group moved on? One row
-- per host: zombie-commit detections (open ones too), the commit records behind them, the groups and members.
WITH member_hosts AS (
  SELECT cluster, group_id, m.member_id, regexp_replace(m.client_host, '^/', '') AS client_host
  FROM group_metadata LATERAL VIEW explode(members) listed AS m
  UNION
  SELECT
    cluster,
    group_id,
    member_id,
    regexp_replace(get_json_object(payload, '$.clientHost'), '^/', '') AS client_host
  FROM group_records
  WHERE record_type = 'ConsumerGroupMemberMetadata' AND NOT is_tombstone
  UNION
  SELECT cluster, group_id, member_id, host AS client_host
  FROM heartbeat_events
  WHERE member_id IS NOT NULL AND host IS NOT NULL
),
zombies AS (
  SELECT
    d.cluster,
    d.group_id,
    d.member_id,
    d.detection_id,
    d.status,
    d.first_seen,
    d.last_seen,
    json_array_length(d.evidence) AS evidence_records,
    coalesce(first(h.client_host, true), 'unknown') AS client_host
  FROM detections AS d
  LEFT JOIN member_hosts AS h
    ON h.cluster = d.cluster AND h.group_id = d.group_id AND h.member_id = d.member_id
  WHERE d.kind = 'zombie_commit' AND d.status <> 'withdrawn'
  GROUP BY d.cluster, d.group_id, d.member_id, d.detection_id, d.status, d.first_seen, d.last_seen, d.evidence
)
SELECT
  client_host,
  count(*) AS detections,
  count_if(status IN ('open', 'provisional')) AS open_detections,
  sum(evidence_records) AS evidence_records,
  array_sort(collect_set(group_id)) AS groups,
  array_sort(collect_set(member_id)) AS members,
  min(first_seen) AS first_seen,
  max(last_seen) AS last_seen
FROM zombies
GROUP BY client_host
ORDER BY detections DESC, last_seen DESC, client_host
