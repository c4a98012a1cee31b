"""Is a Kafka cluster reachable? Asked once, within a bound, before a command starts Spark or a client loop.

A bootstrap address nothing listens on otherwise means librdkafka retrying forever with a few log lines a
second (and the JVM client likewise under Spark): an on-call engineer needs one sentence naming the address and
what to check, quickly. librdkafka's own chatter is counted and its last message kept, never streamed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from rebalance_radar.emitters.kafka_settings import ConfigError, masked
from rebalance_radar.transforms.schemas import GROUP_CONSUMER_SESSION_TIMEOUT, GROUP_STREAMS_SESSION_TIMEOUT


class ClusterUnreachable(ConfigError):
    """The cluster did not answer within the connect timeout; the message says where and what to check."""


class ClientChatter(logging.Handler):
    """Collects librdkafka's log lines and error callbacks: how many, and the last one (kept for the sentence)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        self.last = record.getMessage()

    def on_error(self, error: KafkaError) -> None:
        self.count += 1
        self.last = error.str()

    def logger(self) -> logging.Logger:
        """A private logger routed only here (librdkafka's `logger` setting), not to the console."""
        logger = logging.getLogger(f"radar.librdkafka.{id(self)}")
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)
        return logger


CLIENT_LOGGER = "radar.librdkafka"


def client_logger() -> logging.Logger:
    """The logger radar's librdkafka clients log to (their `logger` setting): silent by default, since an
    unreachable cluster means a few lines a second forever; `radar --verbose` shows it (`show_client_logs`)."""
    logger = logging.getLogger(CLIENT_LOGGER)
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger


def show_client_logs() -> None:
    """`--verbose`: librdkafka's lines on stderr again."""
    logger = client_logger()
    logger.addHandler(logging.StreamHandler())
    logger.setLevel(logging.INFO)


def probe_cluster(settings: Mapping[str, Any], timeout_s: float) -> int:
    """Ask the cluster for its metadata within `timeout_s`; returns the number of brokers, else raises
    `ClusterUnreachable` (a `ConfigError`: `radar` prints it as one sentence and exits 2)."""
    chatter = ClientChatter()
    config = {
        **{k: v for k, v in settings.items() if k not in ("logger", "error_cb")},
        "error_cb": chatter.on_error,
        "logger": chatter.logger(),
        "socket.connection.setup.timeout.ms": max(int(timeout_s * 1000), 1000),
    }
    bootstrap = settings.get("bootstrap.servers", "?")
    admin = AdminClient(config)
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as error:
        admin.poll(0.1)  # serves the queued error callbacks and log lines
        detail = chatter.last or (error.args[0].str() if error.args else str(error))
        noun = "message" if chatter.count == 1 else "messages"
        if refused_credentials(detail):
            raise AccessDenied(
                f"The Kafka cluster at {bootstrap} refused {principal_of(settings)} ({detail}): check the "
                "credentials kafka.security names (their environment variables or secret-scope keys: expired or "
                "changed?), its sasl_mechanism, and the CA in its truststore location."
            ) from None
        raise ClusterUnreachable(
            f"No Kafka broker answered at {bootstrap} within {timeout_s:g} s (last client error: {detail}; "
            f"{chatter.count} client {noun}): check that the broker runs and listens on that host and port, the "
            "address in kafka.bootstrap_servers or --bootstrap, and kafka.security "
            f"(protocol {masked(settings).get('security.protocol', 'PLAINTEXT')}); "
            "kafka.connect_timeout_s sets how long to wait."
        ) from None
    return len(metadata.brokers)


class AccessDenied(ConfigError):
    """The cluster answered, but the principal lacks an ACL a command needs; the message names it."""


AUTHENTICATION_WORDS = ("authentication", "sasl", "ssl handshake", "certificate")


def principal_of(settings: Mapping[str, Any]) -> str:
    """How the cluster knows this client: `User:<sasl.username>`, or the anonymous principal."""
    user = settings.get("sasl.username")
    return f"User:{user}" if user else "User:ANONYMOUS"


def refused_credentials(detail: str) -> bool:
    """A client error that says the broker answered and refused the credentials or the TLS handshake."""
    return any(word in detail.lower() for word in AUTHENTICATION_WORDS)


def probe_access(
    settings: Mapping[str, Any], timeout_s: float, *, read_topics: Sequence[str] = (), describe_groups: bool = False
) -> None:
    """What the cluster lets this principal do, asked before a command starts (a missing ACL otherwise surfaces as
    a stack from inside Spark, or as silence): Read on `read_topics`, Describe on the consumer groups. Raises
    `AccessDenied` naming the missing ACL and the command that grants it."""
    from confluent_kafka import Consumer, TopicPartition

    principal = principal_of(settings)
    base = {k: v for k, v in settings.items() if k not in ("logger", "error_cb")}
    chatter = ClientChatter()
    quiet = {"logger": chatter.logger(), "error_cb": chatter.on_error}

    def denied(operation: str, resource: str, name: str) -> AccessDenied:
        kind = {"topic": "--topic", "group": "--group"}[resource]
        return AccessDenied(
            f"{principal} may not {operation} {resource} {name} on {settings.get('bootstrap.servers', '?')}: grant "
            f"it {operation.capitalize()} on {resource} {name} (kafka-acls.sh --add --allow-principal {principal} "
            f"--operation {operation.capitalize()} {kind} '{name}'), or run radar as a principal that has it."
        )

    for read_topic in read_topics:
        consumer = Consumer(
            {
                **base,
                **quiet,
                "group.id": "radar-access-probe",  # assign() only: it never joins, and commits nothing
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        try:
            metadata = consumer.list_topics(read_topic, timeout=timeout_s)
            topic = metadata.topics.get(read_topic)
            if (
                topic is not None
                and topic.error is not None
                and topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            ):
                raise denied("read", "topic", read_topic)
            if topic is not None and topic.error is None and topic.partitions:
                consumer.assign([TopicPartition(read_topic, min(topic.partitions), -2)])  # -2: the beginning
                deadline_s = timeout_s
                while deadline_s > 0:
                    message = consumer.poll(min(1.0, deadline_s))
                    deadline_s -= 1.0
                    if message is None:
                        continue
                    error = message.error()
                    if error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                        raise denied("read", "topic", read_topic)
                    break  # a record, or the end of the partition: reading is allowed
        finally:
            consumer.close()
    if describe_groups:
        admin = AdminClient({**base, **quiet})
        probe_group = "radar-access-probe"
        future = admin.describe_consumer_groups([probe_group], request_timeout=timeout_s)[probe_group]
        try:
            future.result(timeout=timeout_s + 5)
        except KafkaException as error:
            if error.args and error.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                raise denied("describe", "group", "*") from None


GROUP_SESSION_CONFIGS = ("group.consumer.session.timeout.ms", "group.streams.session.timeout.ms")
"""The broker configs that are every KIP-848 / KIP-1071 member's session timeout (Kafka 3.7+ / 4.1+)."""
GROUP_OVERRIDES = {
    GROUP_CONSUMER_SESSION_TIMEOUT: "group.consumer.session.timeout.ms",
    GROUP_STREAMS_SESSION_TIMEOUT: "group.streams.session.timeout.ms",
}
"""A group's own config (Kafka 4.x group configs) that overrides the broker's, by the broker config it overrides."""
DESCRIBED_PER_REQUEST = 100  # group resources in one DescribeConfigs request


class BrokerConfigUnreadable(Exception):
    """The cluster did not say its group configs; the message says why (a missing ACL, a timeout)."""


@dataclass(frozen=True, slots=True)
class DescribedSessionTimeouts:
    """What the cluster said: its brokers' group session timeouts by broker config name, and the groups that override
    them (group id -> broker config name -> ms; only values set on the group itself). `groups_unread` says, in a
    sentence, which groups' configs could not be read and why (None: every listed group's were)."""

    broker: dict[str, int]
    groups: dict[str, dict[str, int]]
    groups_unread: str | None = None


def describe_group_session_timeouts(settings: Mapping[str, Any], timeout_s: float) -> DescribedSessionTimeouts:
    """The group session timeouts the cluster applies: DescribeConfigs of one broker (the value it runs with, default
    or set; a broker too old for a config leaves it out), then of every KIP-848 and streams group it lists, for the
    groups that set their own (`kafka-configs --entity-type groups`, Kafka 4.x). Raises `BrokerConfigUnreadable`
    when the cluster does not answer or the principal lacks DescribeConfigs on the cluster; groups it may not
    describe are named in `groups_unread`, and their members get the broker's value."""
    chatter = ClientChatter()
    config = {
        **{k: v for k, v in settings.items() if k not in ("logger", "error_cb")},
        "error_cb": chatter.on_error,
        "logger": chatter.logger(),
    }
    admin = AdminClient(config)
    broker = broker_session_timeouts(admin, settings, timeout_s)
    overrides = group_session_overrides(admin, settings, timeout_s)
    return DescribedSessionTimeouts(broker, overrides.groups, overrides.unread)


def broker_session_timeouts(admin: AdminClient, settings: Mapping[str, Any], timeout_s: float) -> dict[str, int]:
    """The group session timeouts one broker runs with (config name -> ms; a broker too old for a config leaves it
    out); raises `BrokerConfigUnreadable` with the reason."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    try:
        nodes = admin.describe_cluster(request_timeout=timeout_s).result(timeout_s).nodes
        if not nodes:
            raise BrokerConfigUnreadable("the cluster named no broker")
        resource = ConfigResource(ResourceType.BROKER, str(nodes[0].id))
        entries = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout_s)
    except KafkaException as error:
        detail = _error_text(error, timeout_s)
        if "authoriz" in detail.lower():
            detail += f" (grant {principal_of(settings)} DescribeConfigs on the cluster)"
        raise BrokerConfigUnreadable(detail) from None
    except TimeoutError:  # concurrent.futures' in Python 3.11
        raise BrokerConfigUnreadable(f"no answer within {timeout_s:g} s") from None
    broker: dict[str, int] = {}
    for name in GROUP_SESSION_CONFIGS:
        entry = entries.get(name)
        if entry is not None and entry.value is not None and str(entry.value).isdigit():
            broker[name] = int(entry.value)
    return broker


@dataclass(frozen=True, slots=True)
class GroupSessionOverrides:
    """The session timeouts the listed non-classic groups set on themselves (group id -> broker config name -> ms),
    the groups whose configs were read (with an override or none), and why others could not be (None: all were)."""

    groups: dict[str, dict[str, int]]
    read: frozenset[str]
    unread: str | None = None
    kept_by_cluster: bool = True
    """False: the cluster refused group config resources as Kafka 3.x does (no group has configs of its own,
    and asking again cannot change that until its brokers are upgraded)."""


def group_session_overrides(admin: AdminClient, settings: Mapping[str, Any], timeout_s: float) -> GroupSessionOverrides:
    """What the cluster says of its non-classic groups' own session timeouts (`GroupSessionOverrides`)."""
    from confluent_kafka import ConsumerGroupType

    try:
        listed = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout_s)
    except KafkaException as error:
        grant = f"grant {principal_of(settings)} Describe on groups"
        why = _error_text(error, timeout_s)
        return GroupSessionOverrides({}, frozenset(), f"the groups could not be listed ({why}; {grant})")
    except TimeoutError:
        return GroupSessionOverrides({}, frozenset(), f"the groups could not be listed within {timeout_s:g} s")
    # a classic member states its own session timeout when it joins; the others' come from the group or the broker.
    # UNKNOWN is kept: librdkafka lists a streams group so, and a broker that predates group types (3.6) every group.
    names = sorted({g.group_id for g in listed.valid if g.type != ConsumerGroupType.CLASSIC})
    return described_session_overrides(admin, names, settings, timeout_s)


def described_session_overrides(
    admin: AdminClient, names: Sequence[str], settings: Mapping[str, Any], timeout_s: float
) -> GroupSessionOverrides:
    """The session timeouts these groups set on themselves, asked with DescribeConfigs in requests of
    `DESCRIBED_PER_REQUEST` groups."""
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    found: dict[str, dict[str, int]] = {}
    read: set[str] = set()
    failed: dict[str, list[str]] = {}
    for at in range(0, len(names), DESCRIBED_PER_REQUEST):
        resources = [ConfigResource(ResourceType.GROUP, name) for name in names[at : at + DESCRIBED_PER_REQUEST]]
        for resource, future in admin.describe_configs(resources, request_timeout=timeout_s).items():
            try:
                entries = future.result(timeout_s)
            except KafkaException as error:
                if _no_group_resources(error):
                    return GroupSessionOverrides({}, frozenset(names), kept_by_cluster=False)
                failed.setdefault(_error_text(error, timeout_s).rstrip("."), []).append(resource.name)
                continue
            except TimeoutError:
                failed.setdefault(f"no answer within {timeout_s:g} s", []).append(resource.name)
                continue
            own = {
                GROUP_OVERRIDES[name]: int(entry.value)
                for name, entry in entries.items()
                if name in GROUP_OVERRIDES
                and int(getattr(entry.source, "value", entry.source)) == ConfigSource.GROUP_CONFIG.value
                and str(entry.value).isdigit()
            }
            read.add(resource.name)
            if own:
                found[resource.name] = own
    if not failed:
        return GroupSessionOverrides(found, frozenset(read))
    reasons = "; ".join(f"{len(groups)} with {why}" for why, groups in sorted(failed.items()))
    first = sorted(g for groups in failed.values() for g in groups)[:3]
    grant = f"grant {principal_of(settings)} DescribeConfigs on those groups" if "authoriz" in reasons.lower() else ""
    return GroupSessionOverrides(
        found,
        frozenset(read),
        f"the configs of {sum(map(len, failed.values()))} group(s) could not be read ({reasons}; e.g. "
        f"{', '.join(first)}){': ' + grant if grant else ''}",
    )


def _no_group_resources(error: KafkaException) -> bool:
    """Kafka 3.x (3.6, 3.8 and 3.9 tried) answers DescribeConfigs of a group resource with INVALID_REQUEST: it keeps
    no group configs."""
    first = error.args[0] if error.args else None
    return isinstance(first, KafkaError) and first.code() == KafkaError.INVALID_REQUEST


def _error_text(error: KafkaException, timeout_s: float) -> str:
    """The error in Kafka's words; a request librdkafka gave up on (no broker, or no controller, answered within the
    timeout) reads as the timeout does when Python's wait ends first, since both mean the same to the user."""
    first = error.args[0] if error.args else None
    if isinstance(first, KafkaError) and first.code() == KafkaError._TIMED_OUT:
        return f"no answer within {timeout_s:g} s"
    return first.str() if isinstance(first, KafkaError) else str(error)
