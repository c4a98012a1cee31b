"""SASL_SSL for the embedded broker, as production clusters run it: TLS with a CA and a broker certificate made for
the run (PEM files), SCRAM-SHA-512 users, and Kafka's StandardAuthorizer with ACLs (nothing allowed without one).

Users and ACLs are created over a PLAINTEXT listener on loopback whose principal (ANONYMOUS) is the broker's super
user, with confluent-kafka's AdminClient: a SCRAM credential goes to the broker salted (never a password on a
command line or in a file), and no secret is written anywhere by this module except the broker's own private key.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX

SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 8192
SECURED_LISTENER = "SASL_SSL"
INTERNAL_LISTENER = "INTERNAL"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CERTIFICATE_DAYS = 2


@dataclass(frozen=True)
class BrokerTls:
    """The PEM files of one run: the CA clients trust, and the broker's key with its certificate chain."""

    ca: Path
    keystore: Path


@dataclass(frozen=True)
class ScramUser:
    """A SCRAM-SHA-512 user of the embedded broker; the repr never shows the password."""

    name: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class Grant:
    """One ACL: `principal` may do `operation` on the resource (`topic`, `group` or `cluster`) named `name`, a
    literal name or, with `prefixed`, every name that starts with it."""

    principal: str
    resource: str
    name: str
    operation: str
    prefixed: bool = False


def make_tls(folder: Path, host: str) -> BrokerTls:
    """A CA and a broker certificate for `host` (an IP address or a name; `localhost` too), valid for two days."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rebalance-radar test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERTIFICATE_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERTIFICATE_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca = folder / "ca.pem"
    ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    keystore = folder / "broker-keystore.pem"
    keystore.touch(mode=0o600)
    keystore.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )  # Kafka's PEM keystore reads an unencrypted PKCS#8 key when no ssl.key.password is set
        + cert.public_bytes(serialization.Encoding.PEM)
        + ca_cert.public_bytes(serialization.Encoding.PEM)
    )
    return BrokerTls(ca, keystore)


def secured_properties(
    host: str, port: int, internal_port: int, controller_port: int, tls: BrokerTls
) -> dict[str, str]:
    """The listeners and security settings of a SASL_SSL broker (on top of `broker.server_properties`)."""
    return {
        "listeners": f"{SECURED_LISTENER}://{host}:{port},{INTERNAL_LISTENER}://{host}:{internal_port},"
        f"CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"{SECURED_LISTENER}://{host}:{port},{INTERNAL_LISTENER}://{host}:{internal_port}",
        "listener.security.protocol.map": f"{SECURED_LISTENER}:SASL_SSL,{INTERNAL_LISTENER}:PLAINTEXT,"
        "CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": INTERNAL_LISTENER,
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        f"listener.name.{SECURED_LISTENER.lower()}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.keystore),
        "authorizer.class.name": AUTHORIZER,
        # the loopback PLAINTEXT listeners (inter-broker, controller, and the admin that creates users and ACLs)
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }


def add_scram_users(internal_bootstrap: str, users: Sequence[ScramUser], timeout_s: float = 30.0) -> None:
    """Create or update SCRAM-SHA-512 credentials (the AdminClient salts them: the password never reaches the
    broker)."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": internal_bootstrap})
    upserts = [
        UserScramCredentialUpsertion(
            user.name,
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS),
            user.password.encode(),
        )
        for user in users
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=timeout_s)


def grant(internal_bootstrap: str, grants: Sequence[Grant], timeout_s: float = 30.0) -> None:
    """Create the ACLs (ALLOW, from any host)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": internal_bootstrap})
    bindings = [
        AclBinding(
            ResourceType.BROKER if g.resource == "cluster" else ResourceType[g.resource.upper()],
            "kafka-cluster" if g.resource == "cluster" else g.name,
            ResourcePatternType.PREFIXED if g.prefixed else ResourcePatternType.LITERAL,
            g.principal,
            "*",
            AclOperation[g.operation.upper()],
            AclPermissionType.ALLOW,
        )
        for g in grants
    ]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=timeout_s)


def monitor_grants(user: str, offsets_topic: str, telemetry_topics: Sequence[str]) -> list[Grant]:
    """What a principal needs to run radar: read `__consumer_offsets` and the telemetry topics (Spark's consumers
    join groups named `rebalance-radar-source-*`), write its clock ticks, describe the cluster (its id names the
    checkpoint), its configs and the groups' (the KIP-848 / streams groups' session timeouts), the consumer groups
    (the poller) and the topics they consume (their end offsets, for lag)."""
    principal = f"User:{user}"
    grants = [
        Grant(principal, "topic", offsets_topic, "read"),
        Grant(principal, "topic", offsets_topic, "describe"),
        Grant(principal, "group", OWN_GROUP_PREFIX, "read", prefixed=True),
        Grant(principal, "group", "*", "describe"),
        Grant(principal, "group", "*", "describe_configs"),
        Grant(principal, "topic", "*", "describe"),
        Grant(principal, "cluster", "kafka-cluster", "describe"),
        Grant(principal, "cluster", "kafka-cluster", "describe_configs"),
    ]
    for topic in telemetry_topics:
        grants += [Grant(principal, "topic", topic, op) for op in ("read", "write", "describe", "create")]
    return grants
