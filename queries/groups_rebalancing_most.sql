-- Question: which groups rebalance most, and why? Every rebalance the tables hold, per group, busiest first, with
-- the causes by count, how many never completed, and the group's state now.
WITH per_cause AS (
  SELECT cluster, group_id, cause, count(*) AS n
  FROM rebalances
  GROUP BY cluster, group_id, cause
),
causes AS (
  SELECT
    cluster,
    group_id,
    array_join(
      transform(
        array_sort(collect_list(named_struct('neg', -n, 'cause', coalesce(cause, 'in progress'), 'n', n))),
        c -> concat(c.cause, ' ', c.n)
      ),
      ', '
    ) AS causes
  FROM per_cause
  GROUP BY cluster, group_id
),
totals AS (
  SELECT
    cluster,
    group_id,
    count(*) AS rebalances,
    count_if(stabilized_at IS NULL) AS not_completed,
    CAST(avg(duration_ms) AS BIGINT) AS avg_duration_ms,
    max(duration_ms) AS max_duration_ms,
    max(started_at) AS last_started_at
  FROM rebalances
  GROUP BY cluster, group_id
)
SELECT
  t.cluster,
  t.group_id,
  t.rebalances,
  t.not_completed,
  c.causes,
  t.avg_duration_ms,
  t.max_duration_ms,
  t.last_started_at,
  h.state,
  h.members,
  h.rebalances_1h,
  h.open_detections
FROM totals AS t
JOIN causes AS c ON c.cluster = t.cluster AND c.group_id = t.group_id
LEFT JOIN group_health AS h ON h.cluster = t.cluster AND h.group_id = t.group_id
ORDER BY t.rebalances DESC, t.last_started_at DESC, t.group_id
LIMIT 20
