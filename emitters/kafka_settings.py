"""Kafka security settings and the one builder of librdkafka client settings from them.

Why here: the emitters (agent, poller, shipper, tap) run beside brokers and consumers without the pipelines, yet
they and `radar capture` / `radar poll-groups` must authenticate exactly like the Spark ingest. So the security
model and the secret lookup live in the emitters package, and `pipelines.config` uses them (its `kafka` section
holds a `SecurityConfig`; its Spark options are rendered from the same `KafkaCredentials`).

Secrets never live in config files: a `SecurityConfig` holds only the *names* of environment variables or
Databricks secret-scope keys; values are read at run time and masked in every printed form.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

MASK = "****"
# Setting names whose values are secrets (librdkafka `sasl.password`, `ssl.key.password`, Spark's JAAS config...).
SECRET_SETTING_WORDS = ("password", "jaas", "secret", "token")
# librdkafka reads CA certificates as PEM; a Java truststore (JKS/PKCS12) is for the Spark (JVM) client only.
PEM_SUFFIXES = (".pem", ".crt", ".cer")
# The settings of an existing librdkafka config that a second client on the same cluster needs (credentials too).
SHARED_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.", "client.dns.lookup", "socket.")

SecretLookup = Callable[[str, str], str]


class ConfigError(ValueError):
    """A configuration problem, phrased as a sentence that names the key and what is expected."""


class SecurityConfig(BaseModel):
    """How to authenticate to Kafka; holds only where the secrets are, never the secrets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    # Names of environment variables that hold the values (local / CI / any cluster).
    username_env: str | None = None
    password_env: str | None = None
    ssl_truststore_location_env: str | None = None
    ssl_truststore_password_env: str | None = None
    # A Databricks secret scope and the keys in it (used instead of the env names when set).
    secret_scope: str | None = None
    username_key: str | None = None
    password_key: str | None = None
    ssl_truststore_location_key: str | None = None
    ssl_truststore_password_key: str | None = None

    @model_validator(mode="after")
    def _sasl_needs_a_mechanism_and_credentials(self) -> SecurityConfig:
        if self.protocol.startswith("SASL"):
            if self.sasl_mechanism is None:
                raise ValueError(
                    f"protocol {self.protocol} needs sasl_mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)"
                )
            has_env = self.username_env and self.password_env
            has_scope = self.secret_scope and self.username_key and self.password_key
            if not (has_env or has_scope):
                raise ValueError(
                    f"protocol {self.protocol} needs username_env+password_env (names of "
                    "environment variables) or secret_scope+username_key+password_key"
                )
        return self


def is_secret_setting(name: str) -> bool:
    return any(word in name.lower() for word in SECRET_SETTING_WORDS)


def masked(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings with every secret value replaced by `MASK` (what may be printed or logged)."""
    return {key: (MASK if is_secret_setting(key) else value) for key, value in settings.items()}


def read_secret(
    name_env: str | None,
    scope: str | None,
    key: str | None,
    what: str,
    env: Mapping[str, str],
    secret_lookup: SecretLookup | None,
) -> str | None:
    """One secret from the secret scope (when configured) or from the named environment variable."""
    if scope and key and secret_lookup is not None:
        return secret_lookup(scope, key)
    if name_env:
        value = env.get(name_env)
        if not value:
            raise ConfigError(
                f"Environment variable {name_env} (kafka.security {what}) is not set; export it before starting radar."
            )
        return value
    if scope and key:
        raise ConfigError(
            f"kafka.security {what} is in secret scope {scope!r} but no secret lookup is "
            "available here; run on Databricks (dbutils.secrets) or set the *_env names."
        )
    return None


@dataclass(frozen=True, slots=True)
class KafkaCredentials:
    """A `SecurityConfig` with its secrets read; the repr masks them (never log the values)."""

    protocol: str
    sasl_mechanism: str | None = None
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    truststore_location: str | None = None
    truststore_password: str | None = field(default=None, repr=False)


def resolve_credentials(
    security: SecurityConfig, env: Mapping[str, str] = os.environ, secret_lookup: SecretLookup | None = None
) -> KafkaCredentials:
    """Read the secrets a `SecurityConfig` names, from the secret scope (if a lookup is given) or the environment."""
    username = password = location = truststore_password = None
    if security.protocol.startswith("SASL"):
        scope = security.secret_scope
        username = read_secret(security.username_env, scope, security.username_key, "username", env, secret_lookup)
        password = read_secret(security.password_env, scope, security.password_key, "password", env, secret_lookup)
    if security.protocol.endswith("SSL"):
        location = read_secret(
            security.ssl_truststore_location_env,
            security.secret_scope,
            security.ssl_truststore_location_key,
            "truststore location",
            env,
            secret_lookup,
        )
        truststore_password = read_secret(
            security.ssl_truststore_password_env,
            security.secret_scope,
            security.ssl_truststore_password_key,
            "truststore password",
            env,
            secret_lookup,
        )
    mechanism = str(security.sasl_mechanism) if security.sasl_mechanism else None
    return KafkaCredentials(security.protocol, mechanism, username, password, location, truststore_password)


class ClientSettings(Mapping[str, Any]):
    """Kafka client settings (librdkafka: `Consumer(dict(settings))`); a Mapping whose repr/str mask every secret."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self._settings = dict(settings)

    def __getitem__(self, key: str) -> Any:
        return self._settings[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._settings)

    def __len__(self) -> int:
        return len(self._settings)

    def masked(self) -> dict[str, Any]:
        return masked(self._settings)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.masked()!r})"

    __str__ = __repr__


JAAS_LOGIN_MODULES = {"PLAIN": "plain.PlainLoginModule", "SCRAM-SHA-256": "scram.ScramLoginModule"}
JAAS_LOGIN_MODULES["SCRAM-SHA-512"] = JAAS_LOGIN_MODULES["SCRAM-SHA-256"]


def client_settings(
    bootstrap_servers: str,
    security: SecurityConfig | None = None,
    env: Mapping[str, str] = os.environ,
    secret_lookup: SecretLookup | None = None,
    *,
    java: bool = False,
    shaded: bool = False,
) -> ClientSettings:
    """The one builder of Kafka client settings: bootstrap.servers + security.protocol (+ SASL credentials and the
    CA) for a librdkafka client (confluent-kafka: the clock, capture, poller, shipper, tap, agent), or with `java`
    for Kafka's Java client (Spark's Kafka source, which prefixes them with `kafka.`; `shaded`: Databricks' shaded
    login-module class names). The credentials are read here, from the environment or the secret scope."""
    if not bootstrap_servers:
        raise ConfigError(
            "No Kafka bootstrap servers given: pass --bootstrap HOST:PORT or set kafka.bootstrap_servers."
        )
    credentials = resolve_credentials(security or SecurityConfig(), env, secret_lookup)
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "security.protocol": credentials.protocol}
    if credentials.sasl_mechanism:
        settings["sasl.mechanism"] = credentials.sasl_mechanism
        if java:
            prefix = "kafkashaded.org.apache.kafka" if shaded else "org.apache.kafka"
            module = JAAS_LOGIN_MODULES[credentials.sasl_mechanism]
            settings["sasl.jaas.config"] = (
                f'{prefix}.common.security.{module} required username="{jaas_quoted(credentials.username)}" '
                f'password="{jaas_quoted(credentials.password)}";'
            )
        else:
            settings["sasl.username"] = credentials.username or ""
            settings["sasl.password"] = credentials.password or ""
    location = credentials.truststore_location
    pem = location is not None and location.lower().endswith(PEM_SUFFIXES)
    if location and java:
        settings["ssl.truststore.location"] = location
        if pem:  # Kafka's Java client reads a PEM CA file as a truststore of that type (KIP-651)
            settings["ssl.truststore.type"] = "PEM"
        elif credentials.truststore_password:
            settings["ssl.truststore.password"] = credentials.truststore_password
    elif location:
        if not pem:
            raise ConfigError(
                "kafka.security truststore location is not a PEM file (.pem/.crt/.cer): librdkafka clients "
                "(radar run's clock, capture, poll-groups, the emitters) read CA certificates as PEM; export the CA "
                "from the Java truststore (keytool -exportcert -rfc) and name that file (Spark reads it too), or "
                "unset it to use the system CAs."
            )
        settings["ssl.ca.location"] = location
    return ClientSettings(settings)


def jaas_quoted(value: str | None) -> str:
    """A value inside a JAAS option's double quotes (a password may hold `"` or `\\`)."""
    return (value or "").replace("\\", "\\\\").replace('"', '\\"')


def shared_client_settings(client_config: Mapping[str, Any]) -> ClientSettings:
    """From a client's own librdkafka config, what another client on the same cluster needs: bootstrap servers and
    every security/socket setting (the agent's telemetry producer, when it reports to the consumer's cluster)."""
    settings = {"bootstrap.servers": client_config.get("bootstrap.servers")}
    settings.update({k: v for k, v in client_config.items() if k.startswith(SHARED_CLIENT_PREFIXES)})
    return ClientSettings(settings)
