"""The coordinator's group session timeouts, learnt before the detection starts and handed to every tracker.

Why: a KIP-848 or streams member's session timeout is the broker's `group.consumer.session.timeout.ms` /
`group.streams.session.timeout.ms`, not its client's. The broker says it once, in the `KafkaConfig values:` listing
of its log at start: an event of no group, which no tracker (one per group) ever sees. So the detection asks before
it starts: the cluster itself (DescribeConfigs, live), else the newest listing `heartbeat_events` holds (a replay
ingests the broker's log before it detects). What it learnt reaches each tracker through the thresholds, with where
it came from for the sentences; radar's conf (`detect.thresholds`) wins over both, and a group whose own events
carry a listing uses that. A group may set its own (Kafka 4.x group configs), which the coordinator applies instead:
those are asked of the cluster too, and win over everything. What changes while the detection runs (a group's own
configs, a broker restarted with new values) reaches the trackers from `radar run`'s poller (`emitters.end_offsets`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.emitters.cluster_probe import (
    GROUP_SESSION_CONFIGS,
    BrokerConfigUnreadable,
    DescribedSessionTimeouts,
    describe_group_session_timeouts,
)
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.storage.delta_log import DRIVER_READ_MAX_BYTES, rows_from_files
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.detectors.thresholds import CLUSTER_ANSWER
from rebalance_radar.transforms.schemas import HEARTBEAT_EVENTS, HeartbeatEventKind

CONF_KEYS = ("consumer_group_session_timeout_ms", "streams_group_session_timeout_ms")
FROM_DESCRIBE_CONFIGS = CLUSTER_ANSWER
FROM_BROKER_LOG = "the configuration listing in the broker's log"
BROKER_CONFIG = HeartbeatEventKind.BROKER_CONFIG.value


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


def described_by_cluster(settings: Mapping[str, Any], timeout_s: float) -> DescribedSessionTimeouts | None:
    """What the cluster says (DescribeConfigs of a broker and of the groups), or None with one sentence on stderr
    saying why not and what then; groups whose configs could not be read are one sentence too."""
    try:
        described = describe_group_session_timeouts(settings, timeout_s)
    except BrokerConfigUnreadable as why:
        print(
            f"radar: the cluster did not say its group session timeouts ({why}); KIP-848 and streams members' "
            "timeouts come from the broker's log if it is shipped, else from detect.thresholds."
            "consumer_/streams_group_session_timeout_ms, else the detections say they are assumed.",
            file=sys.stderr,
        )
        return None
    if described.groups_unread:
        print(
            f"radar: {described.groups_unread}; their KIP-848 and streams members' session timeouts are taken to be "
            "the broker's.",
            file=sys.stderr,
        )
    return described


def from_broker_log(spark: SparkSession, config: RadarConfig) -> BrokerGroupSettings | None:
    """The newest broker configuration listing of this cluster in `heartbeat_events` (None: none, or no table). A
    local table small enough is read from its files in the driver (`delta_log.rows_from_files`), as the run's other
    start-up reads are, rather than with a Spark job at every start."""
    catalog = TableCatalog(config)
    location, name = catalog.location(HEARTBEAT_EVENTS), catalog.name(HEARTBEAT_EVENTS)
    if location is not None and not (location / "_delta_log").is_dir():
        return None
    if location is None and not spark.catalog.tableExists(name):
        return None
    columns = ("cluster", "event", "event_time", "details")
    stored = None if location is None else rows_from_files(location, columns, max_bytes=DRIVER_READ_MAX_BYTES)
    if stored is not None:
        mine = pc.and_(pc.equal(stored["cluster"], config.cluster), pc.equal(stored["event"], BROKER_CONFIG))
        listings = stored.filter(mine).select(["event_time", "details"]).to_pylist()
        newest = max(listings, key=lambda row: row["event_time"], default=None)
        return None if newest is None else BrokerGroupSettings.of(dict(newest["details"] or ()), FROM_BROKER_LOG)
    events = spark.table(name) if location is None else spark.read.format("delta").load(str(location))
    found = (
        events.where(F.col("cluster") == F.lit(config.cluster))
        .where(F.col("event") == BROKER_CONFIG)
        .orderBy(F.col("event_time").desc())
        .select("details")
        .limit(1)
        .collect()
    )
    return BrokerGroupSettings.of(dict(found[0]["details"] or {}), FROM_BROKER_LOG) if found else None


def learnt_thresholds(spark: SparkSession, config: RadarConfig, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    """Threshold values from the cluster's answer (`cluster`: its client settings, when the detection reads it
    live), else from the broker's log. The groups that set their own session timeouts are read from the cluster
    alone (a broker's log does not list them), and win over radar's conf; radar's conf wins over the broker's
    values (an operator's word on the broker is final)."""
    asked_at_ms = int(time.time() * 1000)  # a group's `group_config` event of the run is newer than this answer
    described = None if cluster is None else described_by_cluster(cluster, config.kafka.connect_timeout_s)
    learnt: dict[str, Any] = {}
    if described is not None:
        learnt["group_configs_read_at_ms"] = asked_at_ms
    if described is not None and described.groups:
        learnt["group_session_timeout_overrides"] = tuple(
            (group, own.get(GROUP_SESSION_CONFIGS[0]), own.get(GROUP_SESSION_CONFIGS[1]))
            for group, own in sorted(described.groups.items())
        )
    if any(key in config.detect.threshold_overrides() for key in CONF_KEYS):
        return learnt
    settings = None if described is None else BrokerGroupSettings.of(described.broker, FROM_DESCRIBE_CONFIGS)
    settings = settings or from_broker_log(spark, config)
    if settings is None:
        return learnt
    return {
        **learnt,
        "consumer_group_session_timeout_ms": settings.consumer_session_timeout_ms,
        "streams_group_session_timeout_ms": settings.streams_session_timeout_ms,
        "group_session_timeouts_from": settings.told_by,
    }
