"""Every log line quoted in seeds 001 (rebalancing field guide) and 002 (heartbeat internals), and the two in 004.

Each row keeps the seed's text verbatim (split into fragments where the source concatenates strings). Seeds
quote message templates, so placeholders (`<group_id>`, `{}`, `${group.groupId}`, `$reason`) are filled in
order with `fill` before parsing; lines the seeds quote in full are parsed as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from tests.data_files import SHARED

RECORD_TS = 1_714_564_800_000  # 2024-05-01T12:00:00Z
SEEDS = SHARED / "seeds"
PLACEHOLDER = re.compile(r"<[^<>]+>|\$\{(?:[^{}]|\{[^{}]*\})*\}|\{\}|\$[A-Za-z]\w*")
GEN_41 = "Generation{generationId=41, memberId='m-1', protocol='range'}"
OTTER = "otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5"


@dataclass(frozen=True)
class SeedLine:
    seed: str
    fragments: tuple[str, ...]
    expected: K | None
    fill: tuple[str, ...] = ()
    fields: dict[str, object] = field(default_factory=dict)
    source: S | None = None

    @property
    def template(self) -> str:
        return "".join(self.fragments)

    def text(self) -> str:
        values = iter(self.fill)
        filled = PLACEHOLDER.sub(lambda _: next(values), self.template) if self.fill else self.template
        assert next(values, None) is None, f"unused fill values for {self.template!r}"
        return filled


def line(
    seed: str, text: str | tuple[str, ...], expected: K | None, *fill: str, source: S | None = None, **fields: object
) -> SeedLine:
    fragments = (text,) if isinstance(text, str) else text
    return SeedLine(seed, fragments, expected, fill, fields, source)


B, C = S.BROKER_LOG, S.CLIENT_LOG

CATALOGUE: tuple[SeedLine, ...] = (
    # --- 001: broker side
    line(
        "001",
        "Preparing to rebalance group <group_id> in state <current_state> with old generation <previous_generation_id> (__consumer_offsets-<group_offsets_partition>) (reason: <reason>)",  # noqa: E501
        K.REBALANCE_PREPARE,
        "orders",
        "PreparingRebalance",
        "41",
        "12",
        "removing member m-1 on heartbeat expiration",
        source=B,
        group_id="orders",
        generation=41,
        member_id="m-1",
        reason="removing member m-1 on heartbeat expiration",
        details={"offsets_partition": "12", "cause": "heartbeat_expiration", "state": "PreparingRebalance"},
    ),
    line(
        "001", "removing member <member_id> on heartbeat expiration", K.MEMBER_EXPIRED, "m-1", source=B, member_id="m-1"
    ),
    line(
        "001",
        "Member <member_id> joining group during <current_state>; client reason: <client_reason>",
        K.JOIN,
        "m-2",
        "PreparingRebalance",
        "need to re-join with the given member-id: m-2",
        source=B,
        member_id="m-2",
        reason="need to re-join with the given member-id: m-2",
    ),
    line(
        "001",
        "Removing member <member_id> on LeaveGroup; client reason: <leave_reason>",
        K.LEAVE,
        "m-3",
        "the consumer is being closed",
        source=B,
        member_id="m-3",
        reason="the consumer is being closed",
    ),
    line(
        "001",
        "Updating metadata for member <member_id> during <current_state>; client reason: <client_reason>",
        K.JOIN,
        "m-4",
        "Stable",
        "triggered followup rebalance scheduled for 0",
        source=B,
        member_id="m-4",
        reason="triggered followup rebalance scheduled for 0",
        details={"metadata_update": "true", "state": "Stable"},
    ),
    line(
        "001",
        "Member <memberId> in group <application.id> has failed, removing it from the group",
        K.MEMBER_EXPIRED,
        "m-5",
        "otter-app",
        source=B,
        member_id="m-5",
        group_id="otter-app",
    ),
    line("001", "heartbeat expiration", None),
    # --- 001: client side
    line(
        "001",
        "Request joining group due to: <client_reason>",
        K.JOIN,
        "group is already rebalancing",
        source=C,
        reason="group is already rebalancing",
        details={"phase": "requested"},
    ),
    line("001", "session timed out without receiving a heartbeat response", K.SESSION_TIMEOUT, source=C),
    line(
        "001",
        "Attempt to heartbeat with <sent_generation> and group instance id <group.instance.id> failed due to <error>, resetting generation",  # noqa: E501
        K.HEARTBEAT_FAILED,
        GEN_41,
        "Optional.empty",
        "ILLEGAL_GENERATION",
        source=C,
        generation=41,
        member_id="m-1",
        error="ILLEGAL_GENERATION",
        group_instance_id=None,
    ),
    line(
        "001",
        "Request joining group due to: rebalance failed due to 'The group member needs to have a valid member id before actually entering a consumer group.' (MemberIdRequiredException)",  # noqa: E501
        K.JOIN,
        source=C,
        error="MEMBER_ID_REQUIRED",
    ),
    line(
        "001",
        "Member <member_id> sending LeaveGroup request to coordinator due to <leave_reason>",
        K.LEAVE,
        "m-6",
        "the consumer unsubscribed from all topics",
        source=C,
        member_id="m-6",
        reason="the consumer unsubscribed from all topics",
    ),
    line("001", "the consumer is being closed", None),
    line("001", "the consumer unsubscribed from all topics", None),
    line("001", "consumer poll timeout has expired.", K.POLL_TIMEOUT, source=C),
    line(
        "001",
        "Request joining group due to <client_reason>",
        K.JOIN,
        "triggered followup rebalance scheduled for 0",
        source=C,
        reason="triggered followup rebalance scheduled for 0",
    ),
    line("001", "JoinGroup failed", K.JOIN_FAILED, source=C),
    line("001", "SyncGroup failed", K.SYNC_FAILED, source=C),
    line("001", "unstable assignment", None),
    line("001", "stable assignment", None),
    line(
        "001",
        "Triggering the followup rebalance scheduled for <SCHEDULED_TIME>",
        K.FOLLOWUP_REBALANCE,
        "1714564800000",
        source=C,
        details={"scheduled_for": "1714564800000"},
    ),
    line(
        "001",
        "Requesting followup rebalance be scheduled immediately by {} due to tasks changing ownership.",
        K.FOLLOWUP_REBALANCE,
        "member-7",
        source=C,
        details={"requested_of": "member-7"},
    ),
    line(
        "001",
        "Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner",
        K.FOLLOWUP_REBALANCE,
        source=C,
    ),
    line(
        "001",
        "Requesting followup rebalance be scheduled by {} for {} to probe for caught-up replica tasks",
        K.PROBING_REBALANCE,
        "member-7",
        "2024-05-01 12:10:00,000",
        source=C,
        details={"requested_of": "member-7", "scheduled_for": "2024-05-01 12:10:00,000"},
    ),
    line(
        "001",
        "Requested to schedule next probing rebalance at {} to try for a more balanced assignment",
        K.PROBING_REBALANCE,
        "2024-05-01 12:10:00,000",
        source=C,
    ),
    line("001", "Requested to schedule immediate rebalance due to version probing", K.VERSION_PROBING, source=C),
    line(
        "001",
        "Requested to schedule immediate rebalance to update group with new host endpoint",
        K.FOLLOWUP_REBALANCE,
        source=C,
        details={"cause": "host_endpoint_change"},
    ),
    line(
        "001",
        "Detected that shutdown was requested. All clients in this app will now begin to shutdown",
        K.SHUTDOWN_REQUESTED,
        source=C,
    ),
    line(
        "001",
        f"node0.log: [11:08:54,694] INFO stream-thread [{OTTER}-StreamThread-2-consumer] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        group_id="otter-app",
        client_id=f"{OTTER}-StreamThread-2-consumer",
        event_time=1_714_561_734_694,
        details={"client_nodes": "2", "consumers": "4"},
    ),
    line(
        "001",
        "node1.log: [11:09:45,375] INFO stream-thread [otter-app-c4497316-8891-4f1a-b60e-6952b7c56fcf-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        group_id="otter-app",
    ),
    line(
        "001",
        f"node0.log: [11:10:57,340] INFO stream-thread [{OTTER}-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        group_id="otter-app",
        event_time=1_714_561_857_340,
    ),
    line(
        "001",
        f"node0.log: [11:10:57,362] INFO stream-thread [{OTTER}-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        group_id="otter-app",
    ),
    line(
        "001",
        f"node0.log: [11:24:30,654] INFO stream-thread [{OTTER}-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        group_id="otter-app",
    ),
    line(
        "001",
        f"[11:10:57,345] INFO [Consumer clientId={OTTER}-StreamThread-1-consumer, groupId=otter-app] SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was Generation{{generationId=742, memberId='{OTTER}-StreamThread-1-consumer-7f45268d-547c-47ed-a835-48e7d1503b0f', protocol='stream'}} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:826)",  # noqa: E501
        K.SYNC_FAILED,
        source=C,
        group_id="otter-app",
        generation=742,
        error="REBALANCE_IN_PROGRESS",
        member_id=f"{OTTER}-StreamThread-1-consumer-7f45268d-547c-47ed-a835-48e7d1503b0f",
        client_id=f"{OTTER}-StreamThread-1-consumer",
        reason="The group began another rebalance.",
        event_time=1_714_561_857_345,
        details={"protocol": "stream"},
    ),
    line(
        "001",
        "node0.log: [18:12:54,694] INFO stream-thread [...] 2 client nodes and 3 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        group_id=None,
        client_id=None,
        details={"consumers": "3"},
    ),
    line(
        "001",
        "node0.log: [18:12:45,375] INFO stream-thread [...] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
    ),
    line(
        "001",
        "node0.log: [18:13:57,340] INFO stream-thread [...] 2 client nodes and 3 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
    ),
    line(
        "001",
        "node0.log: [18:13:57,362] INFO stream-thread [...] 3 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
        details={"client_nodes": "3", "consumers": "4"},
    ),
    line(
        "001",
        "node0.log: [18:14:30,654] INFO stream-thread [...] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
        K.ASSIGNMENT,
        source=C,
    ),
    line(
        "001",
        "Replacing thread in the streams uncaught exception handler",
        K.LEAVE,
        source=C,
        details={"cause": "thread_replaced"},
    ),
    # --- 002: heartbeat internals (code quoted from AbstractCoordinator and the Scala GroupCoordinator)
    line("002", "Enabling heartbeat thread", None),
    line("002", "Disabling heartbeat thread", None),
    line("002", "Heartbeat thread started", None),
    line("002", "Heartbeat thread has closed", None),
    line("002", ("session timed out without receiving a ", "heartbeat response"), K.SESSION_TIMEOUT, source=C),
    line("002", "consumer poll timeout has expired.", K.POLL_TIMEOUT, source=C),
    line(
        "002",
        "An authentication error occurred in the heartbeat thread",
        K.HEARTBEAT_FAILED,
        source=C,
        reason="authentication error in heartbeat thread",
    ),
    line(
        "002",
        "Member ${member.memberId} in group ${group.groupId} has failed, removing it from the group",
        K.MEMBER_EXPIRED,
        "m-8",
        "payments",
        source=B,
        member_id="m-8",
        group_id="payments",
    ),
    line(
        "002",
        "removing member ${member.memberId} on heartbeat expiration",
        K.MEMBER_EXPIRED,
        "m-8",
        source=B,
        member_id="m-8",
    ),
    line(
        "002",
        (
            "Preparing to rebalance group ${group.groupId} in state ${group.currentState} with old generation ",
            "${group.generationId} (${Topic.GROUP_METADATA_TOPIC_NAME}-${partitionFor(group.groupId)}) (reason: $reason)",  # noqa: E501
        ),
        K.REBALANCE_PREPARE,
        "payments",
        "PreparingRebalance",
        "7",
        "__consumer_offsets",
        "3",
        "removing member m-8 on heartbeat expiration",
        source=B,
        group_id="payments",
        generation=7,
        member_id="m-8",
        details={"offsets_partition": "3", "cause": "heartbeat_expiration"},
    ),
    line("002", "Received successful Heartbeat response", K.HEARTBEAT, source=C),
    line("002", "group is already rebalancing", None),
    line(
        "002",
        "Ignoring heartbeat response with error {} during {} state",
        K.HEARTBEAT,
        "REBALANCE_IN_PROGRESS",
        "COMPLETING_REBALANCE",
        source=C,
        error="REBALANCE_IN_PROGRESS",
        details={"ignored": "true"},
    ),
    line(
        "002",
        "Attempt to heartbeat with {} and group instance id {} failed due to {}, resetting generation",
        K.HEARTBEAT_FAILED,
        GEN_41,
        "Optional[orders-0]",
        "FENCED_INSTANCE_ID",
        source=C,
        generation=41,
        member_id="m-1",
        group_instance_id="orders-0",
        error="FENCED_INSTANCE_ID",
        details={"generation_reset": "true"},
    ),
    line(
        "002",
        "Attempt to heartbeat with stale {} and group instance id {} failed due to {}, ignoring the error",
        K.HEARTBEAT_FAILED,
        GEN_41,
        "Optional.empty",
        "UNKNOWN_MEMBER_ID",
        source=C,
        generation=41,
        error="UNKNOWN_MEMBER_ID",
        details={"stale": "true"},
    ),
    line("002", "Unexpected error in heartbeat response: ", K.HEARTBEAT_FAILED, source=C),
    line(
        "002",
        "Caught fenced group.instance.id {} error in heartbeat thread",
        K.HEARTBEAT_FAILED,
        "Optional[orders-0]",
        source=C,
        group_instance_id="orders-0",
        error="FENCED_INSTANCE_ID",
    ),
    line("002", "Removing member $memberId on LeaveGroup", K.LEAVE, "m-9", source=B, member_id="m-9"),
    line(
        "002",
        "Member $member has left group $groupId through explicit `LeaveGroup` request",
        K.LEAVE,
        "m-9",
        "payments",
        source=B,
        member_id="m-9",
        group_id="payments",
    ),
    line(
        "002",
        "LeaveGroup response with {} returned successfully: {}",
        K.LEAVE,
        GEN_41,
        "LeaveGroupResponseData()",
        source=C,
        generation=41,
        details={"response": "success"},
    ),
    line(
        "002",
        "LeaveGroup request with {} failed with error: {}",
        K.LEAVE,
        GEN_41,
        "The coordinator is not aware of this member.",
        source=C,
        generation=41,
        error="UNKNOWN_MEMBER_ID",
    ),
    line(
        "002",
        ("The expected leave group response ", "should only contain no more than one member info, however get "),
        None,
    ),
    line("002", "Reached unexpected condition for Dead group $groupId", None, "payments"),
    # --- 004: the Java (4.x) wording of the prepare line, and a consumer's commit failure
    line(
        "004",
        "Preparing to rebalance group {} in state {} with old generation {} (reason: {}).",
        K.REBALANCE_PREPARE,
        "my-app",
        "PreparingRebalance",
        "5",
        "Adding new member m-10 with group instance id null; client reason: need to re-join with the given member-id: m-10",  # noqa: E501
        source=B,
        group_id="my-app",
        generation=5,
        member_id="m-10",
        details={"cause": "member_joined"},
    ),
    line("004", "Offset commit failed", K.COMMIT_FAILED, source=C),
)


def _seed_text(seed: str) -> str:
    return next(SEEDS.glob(f"{seed}_*.txt")).read_text(encoding="utf-8")


@pytest.mark.skipif(
    not SEEDS.is_dir(),
    reason=f"{SEEDS} is absent: the field guides the catalogue quotes live in the shared reference folder",
)
@pytest.mark.parametrize("row", CATALOGUE, ids=lambda r: r.template[:60])
def test_catalogue_text_is_verbatim_from_the_seed(row: SeedLine) -> None:
    seed = _seed_text(row.seed)
    for fragment in row.fragments:
        assert fragment in seed


@pytest.mark.parametrize("row", CATALOGUE, ids=lambda r: r.template[:60])
def test_seed_line_parses_to_expected_row(row: SeedLine) -> None:
    outcome = parse_telemetry_record(row.text().encode(), RECORD_TS)
    if row.expected is None:
        assert not outcome.recognised, outcome
        return
    assert outcome.recognised, outcome.reason
    (event,) = outcome.events
    assert event.event is row.expected
    assert event.source is row.source
    expected_details = row.fields.get("details", {})
    assert isinstance(expected_details, dict)
    for key, value in expected_details.items():
        assert event.details.get(key) == value, (key, event.details)
    for name, value in row.fields.items():
        if name != "details":
            assert getattr(event, name) == value, (name, event)
    if "event_time" not in row.fields and not row.template.startswith(("node", "[")):
        assert event.event_time == RECORD_TS


def test_catalogue_covers_every_client_and_broker_kind_the_seeds_mention() -> None:
    kinds = {row.expected for row in CATALOGUE if row.expected is not None}
    assert kinds >= {
        K.REBALANCE_PREPARE,
        K.MEMBER_EXPIRED,
        K.JOIN,
        K.LEAVE,
        K.SESSION_TIMEOUT,
        K.HEARTBEAT_FAILED,
        K.POLL_TIMEOUT,
        K.JOIN_FAILED,
        K.SYNC_FAILED,
        K.FOLLOWUP_REBALANCE,
        K.PROBING_REBALANCE,
        K.VERSION_PROBING,
        K.SHUTDOWN_REQUESTED,
        K.ASSIGNMENT,
        K.HEARTBEAT,
        K.COMMIT_FAILED,
    }
