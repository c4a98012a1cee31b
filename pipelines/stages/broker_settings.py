"""The coordinator's group session timeouts, learnt before the detection starts and handed to every tracker.

Why: a KIP-848 or streams member's session timeout is the broker's `group.consumer.session.timeout.ms` /
`group.streams.session.timeout.ms`, not its client's. The broker says it once, in the `KafkaConfig values:` listing
of its log at start: an event of no group, which no tracker (one per group) ever sees. So the detection asks before
it starts: the cluster itself (DescribeConfigs, live), else the newest listing `heartbeat_events` holds (a replay
ingests the broker's log before it detects). What it learnt reaches each tracker through the thresholds, with where
it came from for the sentences; radar's conf (`detect.thresholds`) wins over both, and a group whose own events
carry a listing uses that.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.emitters.cluster_probe import (
    GROUP_SESSION_CONFIGS,
    BrokerConfigUnreadable,
    describe_group_session_timeouts,
)
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import HEARTBEAT_EVENTS, HeartbeatEventKind

CONSUMER_SESSION, STREAMS_SESSION = GROUP_SESSION_CONFIGS
CONF_KEYS = ("consumer_group_session_timeout_ms", "streams_group_session_timeout_ms")
FROM_DESCRIBE_CONFIGS = "the cluster's DescribeConfigs answer"
FROM_BROKER_LOG = "the configuration listing in the broker's log"


@dataclass(frozen=True, slots=True)
class BrokerGroupSettings:
    """The group session timeouts a broker applies (None: it did not say) and who said so."""

    consumer_session_timeout_ms: int | None
    streams_session_timeout_ms: int | None
    told_by: str

    @classmethod
    def of(cls, configs: dict[str, Any], told_by: str) -> BrokerGroupSettings | None:
        """From broker config values by name; None when neither is there."""
        values = [configs.get(name) for name in GROUP_SESSION_CONFIGS]
        ms = [int(v) if v is not None and str(v).isdigit() and int(v) > 0 else None for v in values]
        return None if ms == [None, None] else cls(ms[0], ms[1], told_by)


def described_by_cluster(settings: Mapping[str, Any], timeout_s: float) -> BrokerGroupSettings | None:
    """What the cluster says (DescribeConfigs), or None with one sentence on stderr saying why not and what then."""
    try:
        configs = describe_group_session_timeouts(settings, timeout_s)
    except BrokerConfigUnreadable as why:
        print(
            f"radar: the cluster did not say its group session timeouts ({why}); KIP-848 and streams members' "
            "timeouts come from the broker's log if it is shipped, else from detect.thresholds."
            "consumer_/streams_group_session_timeout_ms, else the detections say they are assumed.",
            file=sys.stderr,
        )
        return None
    return BrokerGroupSettings.of(configs, FROM_DESCRIBE_CONFIGS)


def from_broker_log(spark: SparkSession, config: RadarConfig) -> BrokerGroupSettings | None:
    """The newest broker configuration listing of this cluster in `heartbeat_events` (None: none, or no table)."""
    catalog = TableCatalog(config)
    location, name = catalog.location(HEARTBEAT_EVENTS), catalog.name(HEARTBEAT_EVENTS)
    if location is not None and not (location / "_delta_log").is_dir():
        return None
    if location is None and not spark.catalog.tableExists(name):
        return None
    events = spark.table(name) if location is None else spark.read.format("delta").load(str(location))
    newest = (
        events.where(F.col("cluster") == F.lit(config.cluster))
        .where(F.col("event") == HeartbeatEventKind.BROKER_CONFIG.value)
        .orderBy(F.col("event_time").desc())
        .select("details")
        .limit(1)
        .collect()
    )
    return BrokerGroupSettings.of(dict(newest[0]["details"] or {}), FROM_BROKER_LOG) if newest else None


def learnt_thresholds(
    spark: SparkSession, config: RadarConfig, described: BrokerGroupSettings | None
) -> dict[str, Any]:
    """Threshold values from what the cluster `described`, else from the broker's log, unless radar's conf sets
    either session timeout (an operator's word is final)."""
    if any(key in config.detect.threshold_overrides() for key in CONF_KEYS):
        return {}
    settings = described or from_broker_log(spark, config)
    if settings is None:
        return {}
    return {
        "consumer_group_session_timeout_ms": settings.consumer_session_timeout_ms,
        "streams_group_session_timeout_ms": settings.streams_session_timeout_ms,
        "group_session_timeouts_from": settings.told_by,
    }
