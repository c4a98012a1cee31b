"""Is a Kafka cluster reachable? Asked once, within a bound, before a command starts Spark or a client loop.

A bootstrap address nothing listens on otherwise means librdkafka retrying forever with a few log lines a
second (and the JVM client likewise under Spark): an on-call engineer needs one sentence naming the address and
what to check, quickly. librdkafka's own chatter is counted and its last message kept, never streamed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from emitters.kafka_settings import ConfigError, masked


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
        raise ClusterUnreachable(
            f"No Kafka broker answered at {bootstrap} within {timeout_s:g} s (last client error: {detail}; "
            f"{chatter.count} client {noun}): check that the broker runs and listens on that host and port, the "
            "address in kafka.bootstrap_servers or --bootstrap, and kafka.security "
            f"(protocol {masked(settings).get('security.protocol', 'PLAINTEXT')}); "
            "kafka.connect_timeout_s sets how long to wait."
        ) from None
    return len(metadata.brokers)
