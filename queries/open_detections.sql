-- Question: what is wrong right now? Every open detection, critical first, newest first.
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
  summary
FROM detections
WHERE status = 'open'
ORDER BY
  CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
  detected_at DESC,
  group_id
