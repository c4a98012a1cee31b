-- Question: what is wrong right now? Every open detection (provisional ones too: a live run shows them before the
-- watermark confirms them), critical first, newest first.
SELECT
  cluster,
  group_id,
  kind,
  severity,
  member_id,
  generation,
  topic,
  `partition`,
  first_seen,
  last_seen,
  detected_at,
  status,
  summary
FROM detections
WHERE status IN ('open', 'provisional')
ORDER BY
  CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
  detected_at DESC,
  group_id
