"""radar against a Kafka cluster secured as production ones are: the embedded broker with SASL_SSL (SCRAM-SHA-512 over
TLS, a CA and certificate made for the run) and ACLs, nothing allowed without one.

- `radar run`, the consumer agent and the group poller connect with credentials from the environment (through the
  one builder of client settings) and a detection is seen; radar run's end-offset poller writes the group's end offsets.
- A principal without Read on `__consumer_offsets`, one without Describe on the groups, and wrong credentials each
  get one sentence naming what is missing, not a hang or a traceback.
- Clock ticks that cannot be written are said, on the run's status line.
- The passwords never appear in logs, tables or error messages.
"""

from __future__ import annotations

import io
import os
import secrets
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from rebalance_radar.emitters.end_offsets import EndOffsetsPoller
from rebalance_radar.emitters.kafka_settings import SecurityConfig, client_settings
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from rebalance_radar.pipelines.local.broker_security import Grant, ScramUser, monitor_grants
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.pipelines.local.topics import ensure_offsets_topic
from rebalance_radar.pipelines.runtime.console import StatusLine
from rebalance_radar.pipelines.stages.broker_settings import described_by_cluster
from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, HEARTBEAT_EVENTS, PARTITION_END_OFFSETS, TABLES
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.group_member import CoordinatorLog, kip848_group_setting_its_session_timeout, start_member
from tests.pipelines.ingest_support import table, wait_for
from tests.pipelines.radar_run_process import RadarRun, radar_command

pytestmark = [pytest.mark.secured_broker, pytest.mark.kafka]

BLIND_POLLER = "end-offsets@notopics"  # the emitter of the test's own poller without Describe on the topics
USER_ENV, PASSWORD_ENV, CA_ENV = "RADAR_TEST_KAFKA_USER", "RADAR_TEST_KAFKA_PASSWORD", "RADAR_TEST_KAFKA_CA"
SECURITY = SecurityConfig(
    protocol="SASL_SSL",
    sasl_mechanism="SCRAM-SHA-512",
    username_env=USER_ENV,
    password_env=PASSWORD_ENV,
    ssl_truststore_location_env=CA_ENV,
)


@dataclass(frozen=True)
class SecuredCluster:
    broker: EmbeddedKafka
    telemetry: str
    work_topic: str
    users: dict[str, ScramUser]

    def env(self, user: str, password: str | None = None) -> dict[str, str]:
        """The environment a user of this cluster runs radar or a member with: credentials by variable names."""
        assert self.broker.tls is not None
        return {
            USER_ENV: user,
            PASSWORD_ENV: self.users[user].password if password is None else password,
            CA_ENV: str(self.broker.tls.ca),
        }

    def radar_env(self, user: str, password: str | None = None) -> dict[str, str]:
        return (
            os.environ
            | self.env(user, password)
            | {
                "RADAR__KAFKA__BOOTSTRAP_SERVERS": self.broker.bootstrap_servers,
                "RADAR__KAFKA__TELEMETRY_TOPICS": f"[{self.telemetry}]",
                "RADAR__KAFKA__SECURITY": SECURITY.model_dump_json(exclude_none=True),
                "RADAR__KAFKA__CONNECT_TIMEOUT_S": "15",
            }
        )

    @property
    def passwords(self) -> list[str]:
        return [user.password for user in self.users.values()]


@contextmanager
def secured_cluster(radar_config: RadarConfig, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    """A SASL_SSL broker with seven principals: `radar` (what `monitor_grants` gives), `app` (a consumer fleet with
    the agent and the poller), `blind` (radar's grants but Read on __consumer_offsets), `mute` (radar's grants but
    Write on the telemetry topic), `nogroups` (may describe the cluster, no group), `notopics` (radar's grants but
    Describe on the users' topics), `noconfigs` (radar's grants but DescribeConfigs on the groups)."""
    tag = uuid.uuid4().hex[:6]
    telemetry, work = f"radar.telemetry.secured-{tag}", f"work-secured-{tag}"
    broker = EmbeddedKafka(
        radar_config.broker, tmp_path_factory.mktemp("secured"), secured=True, progress=io.StringIO()
    )
    with broker:
        admin = AdminClient({"bootstrap.servers": broker.admin_bootstrap_servers})
        for future in admin.create_topics([NewTopic(telemetry, 1, 1), NewTopic(work, 2, 1)]).values():
            future.result(30)
        ensure_offsets_topic(broker.admin_bootstrap_servers, "__consumer_offsets")  # as on any cluster in use
        names = ("radar", "app", "blind", "mute", "nogroups", "notopics", "noconfigs")
        users = {name: ScramUser(name, secrets.token_urlsafe(18)) for name in names}
        full = monitor_grants("radar", "__consumer_offsets", [telemetry])
        app = [
            Grant("User:app", "group", "app-", "read", prefixed=True),
            Grant("User:app", "group", "*", "describe"),
            Grant("User:app", "topic", work, "read"),
            Grant("User:app", "topic", work, "describe"),
            Grant("User:app", "topic", telemetry, "write"),
            Grant("User:app", "topic", telemetry, "describe"),
        ]
        blind = [
            Grant("User:blind", g.resource, g.name, g.operation, g.prefixed)
            for g in full
            if not (g.name == "__consumer_offsets" and g.operation == "read")
        ]
        mute = [
            Grant("User:mute", g.resource, g.name, g.operation, g.prefixed)
            for g in full
            if not (g.name == telemetry and g.operation == "write")
        ]
        nogroups = [Grant("User:nogroups", "cluster", "kafka-cluster", "describe")]
        notopics = [
            Grant("User:notopics", g.resource, g.name, g.operation, g.prefixed)
            for g in full
            if not (g.resource == "topic" and g.name == "*")
        ]
        noconfigs = [
            Grant("User:noconfigs", g.resource, g.name, g.operation, g.prefixed)
            for g in full
            if not (g.resource == "group" and g.operation == "describe_configs")
        ]
        broker.add_users(list(users.values()), [*full, *app, *blind, *mute, *nogroups, *notopics, *noconfigs])
        yield SecuredCluster(broker, telemetry, work, users)


def assert_no_password(text: str, cluster: SecuredCluster, where: str) -> None:
    for password in cluster.passwords:
        assert password not in text, f"a password appears in {where}"


def test_a_principal_without_read_on_consumer_offsets_is_told_which_acl_is_missing(
    secured: SecuredCluster, tmp_path: Path
) -> None:
    started = time.monotonic()
    done = subprocess.run(
        radar_command("--data-dir", str(tmp_path / "data"), "run"),
        env=secured.radar_env("blind"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "User:blind may not read topic __consumer_offsets" in output
    assert "--operation Read --topic '__consumer_offsets'" in output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert time.monotonic() - started < 60  # said before any Spark start, not after a hang
    assert_no_password(output, secured, "the missing-ACL error")


def refused_commands(secured: SecuredCluster, tmp_path: Path) -> RefusedCommands:
    """`radar run` with a wrong password, and the group poller of a principal without Describe on the groups."""
    wrong = "not-" + secured.users["radar"].password
    run = subprocess.run(
        radar_command("--data-dir", str(tmp_path / "data"), "run"),
        env=secured.radar_env("radar", password=wrong),
        capture_output=True,
        text=True,
        timeout=120,
    )
    poll = subprocess.run(
        radar_command("poll-groups", "--once", "--group", "any"),
        env=secured.radar_env("nogroups"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return RefusedCommands(wrong, run, poll)


def test_wrong_credentials_and_a_missing_describe_on_groups_are_sentences(secured_run: SecuredRun) -> None:
    secured, refused = secured_run.cluster, secured_run.refused_commands
    output = refused.run.stdout + refused.run.stderr
    assert refused.run.returncode == 2, output
    assert "refused User:radar" in output and "expired or changed?" in output, output
    assert "Traceback" not in output and refused.wrong_password not in output
    assert_no_password(output, secured, "the refused-credentials error")
    output = refused.poll.stdout + refused.poll.stderr
    assert refused.poll.returncode == 2, output
    assert "User:nogroups may not describe group *" in output and "Traceback" not in output, output
    assert_no_password(output, secured, "the missing-describe error")


def test_the_group_session_timeouts_need_describe_configs_on_the_cluster_and_the_groups(
    secured: SecuredCluster, radar_config: RadarConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    """`radar`'s grants read the broker's group session timeouts and a group's own over SASL_SSL; a principal without
    DescribeConfigs on the cluster, or on the groups, gets one sentence naming the grant, and the run goes on
    without the value."""
    settings = client_settings(secured.broker.bootstrap_servers, SECURITY, env=secured.env("radar"))
    member = client_settings(secured.broker.bootstrap_servers, SECURITY, env=secured.env("app"))
    admin = {"bootstrap.servers": secured.broker.admin_bootstrap_servers}
    group = f"app-own-timeout-{uuid.uuid4().hex[:6]}"
    with kip848_group_setting_its_session_timeout(member, admin, group, secured.work_topic, 8_000):
        found = described_by_cluster(settings, 15)
        capsys.readouterr()
        unread = described_by_cluster(
            client_settings(secured.broker.bootstrap_servers, SECURITY, env=secured.env("noconfigs")), 15
        )
        said_unread = capsys.readouterr().err
    assert found is not None and found.groups_unread is None
    assert found.broker["group.consumer.session.timeout.ms"] == radar_config.broker.group_consumer_session_timeout_ms
    assert found.groups[group] == {"group.consumer.session.timeout.ms": 8_000}
    assert unread is not None and group not in unread.groups  # the broker's values, without the group's own
    assert "could not be read" in said_unread and "grant User:noconfigs DescribeConfigs on those groups" in said_unread
    assert said_unread.count("\n") == 1 and "Traceback" not in said_unread, said_unread
    refused = client_settings(secured.broker.bootstrap_servers, SECURITY, env=secured.env("nogroups"))
    assert described_by_cluster(refused, 15) is None
    said = capsys.readouterr().err
    assert "grant User:nogroups DescribeConfigs on the cluster" in said, said
    assert "Traceback" not in said
    assert_no_password(said + said_unread, secured, "the missing-DescribeConfigs sentences")


def test_clock_ticks_that_cannot_be_written_are_said_on_the_status_line(secured: SecuredCluster) -> None:
    settings = client_settings(secured.broker.bootstrap_servers, SECURITY, env=secured.env("mute"))
    clock = ClockTickEmitter(settings, secured.telemetry, interval_ms=200)
    out = io.StringIO()
    status = StatusLine("radar run", [], stream=out, problems=lambda: [p for p in (clock.problem(),) if p])
    with clock:
        wait_for(lambda: clock.problem() is not None, 60, "the clock to say its ticks fail")
        status.update()
        refused = clock.failures
        # ticks refused at once (the client knows the ACL now) must not end the clock
        wait_for(lambda: clock.failures >= refused + 3 or not clock.running, 30, "three more refused ticks")
        assert clock.running
    said = out.getvalue()
    assert clock.ticks == 0 and clock.failures > 0
    assert "clock ticks to" in said and "are not delivered" in said and "Write ACL" in said, said
    assert "FAILING: clock ticks" in said, said
    assert_no_password(said + repr(settings) + str(settings), secured, "the clock's sentence")


@dataclass(frozen=True)
class RefusedCommands:
    """The two commands the secured cluster refuses (`refused_commands`), run in the lane."""

    wrong_password: str
    run: subprocess.CompletedProcess[str]
    poll: subprocess.CompletedProcess[str]


@dataclass(frozen=True)
class SecuredRun:
    """What the lane's `radar run` on the secured cluster left for the tests (`record_run_on_the_secured_cluster`)."""

    cluster: SecuredCluster
    group: str
    config: RadarConfig
    run_output: str
    run_returncode: int | None
    polled: subprocess.CompletedProcess[str]
    refused: str
    refused_commands: RefusedCommands


@lane_run
def record_run_on_the_secured_cluster(context: RecordingContext) -> SecuredRun:
    """The secured cluster, kept up for the module's tests until the session ends, and on it, in the suite's lane
    (`concurrent_recordings.lane_run`): `radar run`, two members (one with the agent), the group poller and an
    end-offsets poller without Describe on the members' topic; a member expires. Then the commands it refuses."""
    stack = ExitStack()
    context.at_teardown(stack.close)
    secured = stack.enter_context(secured_cluster(context.config, context.tmp_path_factory))
    tmp_path = context.tmp_path_factory.mktemp("secured-run")
    group = f"app-group-{uuid.uuid4().hex[:6]}"
    config = context.config.with_data_dir(tmp_path / "data")
    member_env = os.environ | {  # the members' own credentials, by variable name
        key.replace("RADAR_TEST_KAFKA", "APP_KAFKA"): value for key, value in secured.env("app").items()
    }
    member_security = SECURITY.model_copy(
        update={
            "username_env": "APP_KAFKA_USER",
            "password_env": "APP_KAFKA_PASSWORD",
            "ssl_truststore_location_env": "APP_KAFKA_CA",
        }
    ).model_dump_json(exclude_none=True)
    bootstrap = secured.broker.bootstrap_servers
    members: list[MemberProcess] = []
    env = secured.radar_env("radar") | {
        "RADAR__INGEST__TRIGGER_INTERVAL": "2 seconds",
        "RADAR__LAG__POLL_INTERVAL": "2 seconds",
    }
    try:
        with RadarRun(config, env, tmp_path / "run.log") as run:

            def member(name: str, *extra: str) -> MemberProcess:
                started = start_member(
                    tmp_path,
                    name,
                    bootstrap,
                    secured.work_topic,
                    group,
                    "--security",
                    member_security,
                    *extra,
                    env=member_env,
                )
                members.append(started)
                return started

            a = member("A", "--agent-topic", secured.telemetry, "--session-timeout-ms", "3000")
            a.wait_for("assigned", 60)
            b = member("B", "--session-timeout-ms", "3000")
            b.wait_for("assigned", 60)
            polled = subprocess.run(
                radar_command("poll-groups", "--once", "--group", group, "--topic", secured.telemetry),
                env=secured.radar_env("app"),
                capture_output=True,
                text=True,
                timeout=120,
            )
            # lag without Describe on the group's topic: the topic is named once, the round goes on
            blind_to_topics = client_settings(bootstrap, SECURITY, env=secured.env("notopics"))
            end_offsets = EndOffsetsPoller(blind_to_topics, secured.telemetry, groups=[group], emitter=BLIND_POLLER)
            try:
                end_offsets.poll_once()
            finally:
                end_offsets.stop()
            coordinator = CoordinatorLog(secured.broker.log_file)
            a.signal(signal.SIGSTOP)  # past its 3 s session: expired
            coordinator.wait_expired(group)
            a.signal(signal.SIGCONT)
            run.wait_for_detection(group)
    finally:
        for started in members:
            started.stop()
    refused = refused_commands(secured, context.tmp_path_factory.mktemp("secured-refused"))
    return SecuredRun(secured, group, config, run.output, run.returncode, polled, end_offsets.problem() or "", refused)


@pytest.fixture(scope="module")
def secured_run(concurrent_recordings: ConcurrentRecordings) -> SecuredRun:
    return concurrent_recordings.result(record_run_on_the_secured_cluster, timeout_s=1500)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def secured(secured_run: SecuredRun) -> SecuredCluster:
    """The SASL_SSL broker the lane started, with its principals (`secured_cluster`)."""
    return secured_run.cluster


@pytest.mark.spark
@pytest.mark.slow
def test_radar_run_the_agent_and_the_poller_see_a_detection_on_a_sasl_ssl_broker(
    spark: SparkSession, secured_run: SecuredRun
) -> None:
    secured, group, config, output = secured_run.cluster, secured_run.group, secured_run.config, secured_run.run_output
    polled = secured_run.polled
    assert polled.returncode == 0, polled.stdout + polled.stderr
    assert "1 group snapshots" in polled.stderr, polled.stderr
    assert_no_password(polled.stdout + polled.stderr, secured, "the poller's output")
    refused = secured_run.refused
    assert f"end offsets of {secured.work_topic} are refused (TOPIC_AUTHORIZATION_FAILED)" in refused, refused
    assert "grant radar's principal Describe on those topics" in refused
    assert secured_run.run_returncode == 0, output[-3000:]
    kinds = {r["kind"] for r in table(spark, config, DETECTIONS).where(f"group_id = '{group}'").collect()}
    assert kinds, output[-3000:]
    events = table(spark, config, HEARTBEAT_EVENTS).where(f"group_id = '{group}'").collect()
    assert events, "no telemetry of the group from the agent and the poller on the secured telemetry topic"
    ends = table(spark, config, PARTITION_END_OFFSETS).where(f"group_id = '{group}' AND emitter != '{BLIND_POLLER}'")
    ends = ends.collect()
    assert ends, "radar run's end-offset poller wrote nothing for the group over SASL_SSL"
    assert {(r["topic"], r["error"]) for r in ends} == {(secured.work_topic, None)}, ends
    assert all(r["end_offset"] is not None for r in ends)
    # the passwords: not in radar's console, not in Spark's logs, not in any table
    assert_no_password(output, secured, "radar run's output")
    for log_file in config.data_dir.rglob("*.log"):
        assert_no_password(log_file.read_text(errors="replace"), secured, str(log_file))
    for schema in TABLES.values():
        location = TableCatalog(config).location(schema)
        if location is not None and (location / "_delta_log").is_dir():
            rows = "\n".join(spark.read.format("delta").load(str(location)).toJSON().collect())
            assert_no_password(rows, secured, f"table {schema.name}")
