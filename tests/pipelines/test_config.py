"""Config loading: clear errors naming the bad key, env overrides, secrets never printed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from rebalance_radar.pipelines.config import (
    REPO_ROOT,
    ConfigError,
    KafkaConfig,
    SecurityConfig,
    kafka_client_options,
    load_config,
)
from rebalance_radar.pipelines.stages.sources import starting_options


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conf.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["local", "dev", "prod"])
def test_shipped_configs_load(name: str) -> None:
    config = load_config(f"conf/{name}.yml", env={})
    assert config.kafka.offsets_topic == "__consumer_offsets"
    assert config.kafka.telemetry_topics == ("radar.telemetry",)


def test_local_defaults_start_the_embedded_broker() -> None:
    config = load_config("conf/local.yml", env={})
    assert config.kafka.embedded
    assert config.spark.master == "local[2]"
    assert config.broker.group_initial_rebalance_delay_ms == 0
    assert config.checkpoint_dir == REPO_ROOT / ".radar" / "checkpoints"  # relative to the conf file


def test_unknown_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "kafka:\n  bootstrap_server: localhost:9092\n")
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap_server: unknown key"):
        load_config(path, env={})


def test_bad_value_names_key_and_expectation(tmp_path: Path) -> None:
    path = write(tmp_path, "spark:\n  shuffle_partitions: zero\n")
    with pytest.raises(ConfigError, match=r"spark\.shuffle_partitions: .*integer.*'zero'"):
        load_config(path, env={})


def test_an_alert_rule_is_checked_at_load_not_when_the_checks_first_run(tmp_path: Path) -> None:
    path = write(tmp_path, "checks:\n  rules:\n    quarantine_ratio: {threshold: 0.5}\n")
    with pytest.raises(
        ConfigError, match=r"checks\.rules\.quarantine_ratio.*'quarantine_rate'.*got 'quarantine_ratio'"
    ):
        load_config(path, env={})
    path = write(tmp_path, "checks:\n  rules:\n    quarantine_rate: {threshold: 0.5}\n")
    assert load_config(path, env={}).checks.rules["quarantine_rate"].threshold == 0.5


@pytest.mark.parametrize("interval", ["1 secnd", "soon", "10 s"])
def test_a_trigger_interval_spark_would_refuse_is_refused_at_load(tmp_path: Path, interval: str) -> None:
    path = write(tmp_path, f"detect:\n  gold_trigger_interval: {interval}\n")
    with pytest.raises(ConfigError, match=r"detect\.gold_trigger_interval: Value error, expected a number and a unit"):
        load_config(path, env={})


def test_missing_file_says_what_to_do() -> None:
    with pytest.raises(ConfigError, match="pass --conf"):
        load_config("conf/nope.yml", env={})


def test_env_override_nested_and_typed() -> None:
    config = load_config(
        "conf/local.yml",
        env={
            "RADAR__KAFKA__BOOTSTRAP_SERVERS": "broker-1:9093",
            "RADAR__KAFKA__TELEMETRY_TOPICS": "[a, b]",
            "RADAR__SPARK__SHUFFLE_PARTITIONS": "8",
            "UNRELATED": "x",
        },
    )
    assert config.kafka.bootstrap_servers == "broker-1:9093"
    assert config.kafka.telemetry_topics == ("a", "b")
    assert config.spark.shuffle_partitions == 8


@pytest.mark.parametrize(("raw", "topics"), [("a,b", ("a", "b")), ("a, b,", ("a", "b")), ("one", ("one",))])
def test_env_override_takes_a_comma_separated_list(raw: str, topics: tuple[str, ...]) -> None:
    """YAML reads `a,b` as one string: a list field splits it (it was rejected as "not a valid tuple")."""
    config = load_config("conf/local.yml", env={"RADAR__KAFKA__TELEMETRY_TOPICS": raw})
    assert config.kafka.telemetry_topics == topics


def test_starting_offsets_take_a_moment_with_its_zone() -> None:
    """A new checkpoint can start at a moment (the last hour of a long `__consumer_offsets`); one without a zone
    would mean another instant on every machine, so it is refused at load."""
    config = load_config("conf/local.yml", env={"RADAR__KAFKA__STARTING_OFFSETS": "2026-12-03T04:00:00+01:00"})
    assert config.kafka.starting_offsets == datetime(2026, 12, 3, 3, 0, tzinfo=UTC)
    assert starting_options(config.kafka.starting_offsets) == {
        "startingTimestamp": "1796266800000",
        "startingOffsetsByTimestampStrategy": "latest",
    }
    assert starting_options(load_config("conf/local.yml", env={}).kafka.starting_offsets) == {
        "startingOffsets": "earliest"
    }
    with pytest.raises(ConfigError, match=r"kafka\.starting_offsets.*timezone"):
        load_config("conf/local.yml", env={"RADAR__KAFKA__STARTING_OFFSETS": "2026-12-03T04:00:00"})


def test_env_override_with_a_typo_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"environment overrides: kafka\.bootstrap: unknown key"):
        load_config("conf/local.yml", env={"RADAR__KAFKA__BOOTSTRAP": "x"})


def test_config_is_frozen() -> None:
    config = load_config("conf/local.yml", env={})
    with pytest.raises(ValueError, match="frozen"):
        config.cluster = "other"  # type: ignore[misc]


def test_sasl_needs_where_the_credentials_are(tmp_path: Path) -> None:
    path = write(tmp_path, "kafka:\n  security:\n    protocol: SASL_SSL\n    sasl_mechanism: PLAIN\n")
    with pytest.raises(ConfigError, match=r"kafka\.security.*username_env"):
        load_config(path, env={})


def test_secrets_from_env_are_masked() -> None:
    kafka = KafkaConfig(
        bootstrap_servers="b:9093",
        security=SecurityConfig(
            protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", username_env="U", password_env="P"
        ),
    )
    options = kafka_client_options(kafka, env={"U": "alice", "P": "s3cr3t-value"})
    assert 'password="s3cr3t-value"' in options["kafka.sasl.jaas.config"]
    assert "ScramLoginModule" in options["kafka.sasl.jaas.config"]
    assert "s3cr3t-value" not in repr(options)
    assert "s3cr3t-value" not in str(options)
    assert "s3cr3t-value" not in repr(kafka)


def test_secret_scope_lookup_and_missing_env() -> None:
    config = load_config("conf/prod.yml", env={"RADAR__KAFKA__BOOTSTRAP_SERVERS": "b:9093"})
    options = kafka_client_options(config.kafka, env={}, secret_lookup=lambda scope, key: f"{scope}/{key}", shaded=True)
    assert 'password="radar-prod/kafka-password"' in options["kafka.sasl.jaas.config"]
    assert options["kafka.sasl.jaas.config"].startswith("kafkashaded.")
    with pytest.raises(ConfigError, match=r"RADAR_KAFKA_USERNAME .*is not set"):
        kafka_client_options(config.kafka, env={})


def test_client_settings_read_the_same_security_as_spark() -> None:
    """capture, poll-groups and the emitters authenticate from the same kafka.security as the Spark source."""
    from rebalance_radar.emitters.kafka_settings import client_settings

    security = SecurityConfig(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", username_env="U", password_env="P")
    settings = client_settings("b:9093", security, env={"U": "alice", "P": "s3cr3t-value"})
    assert dict(settings) == {
        "bootstrap.servers": "b:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "s3cr3t-value",
    }
    assert "s3cr3t-value" not in repr(settings) and "s3cr3t-value" not in str(settings)
    assert dict(client_settings("b:9092")) == {"bootstrap.servers": "b:9092", "security.protocol": "PLAINTEXT"}
    prod = load_config("conf/prod.yml", env={}).kafka.security
    scoped = client_settings("b:9093", prod, env={}, secret_lookup=lambda scope, key: f"{scope}/{key}")
    assert scoped["sasl.password"] == "radar-prod/kafka-password"
    with pytest.raises(ConfigError, match=r"RADAR_KAFKA_USERNAME .*is not set"):
        client_settings("b:9093", prod, env={})


def test_client_settings_take_a_pem_ca_and_refuse_a_java_truststore() -> None:
    from rebalance_radar.emitters.kafka_settings import client_settings

    security = SecurityConfig(protocol="SSL", ssl_truststore_location_env="CA")
    assert client_settings("b:9093", security, env={"CA": "/etc/ca.pem"})["ssl.ca.location"] == "/etc/ca.pem"
    with pytest.raises(ConfigError, match="not a PEM file"):
        client_settings("b:9093", security, env={"CA": "/etc/truststore.jks"})
    options = kafka_client_options(KafkaConfig(bootstrap_servers="b:9093", security=security), env={"CA": "/x.jks"})
    assert options["kafka.ssl.truststore.location"] == "/x.jks"  # the JVM client reads the Java truststore
