"""Group-coordinator broker log lines -> heartbeat events, in the Scala and the Java coordinator's wording.

Wording by version (Apache Kafka source):
- 2.x-3.x, Scala `kafka.coordinator.group.GroupCoordinator`, prefix `[GroupCoordinator <broker>]: `:
  "Preparing to rebalance group G in state S with old generation N (__consumer_offsets-P) (reason: R)",
  "Stabilized group G generation N (__consumer_offsets-P)" (3.x appends " with K members"),
  "Group G with generation N is now empty (__consumer_offsets-P)",
  "Member M in group G has failed, removing it from the group" (reason "removing member M on heartbeat
  expiration"), "Member MemberMetadata(memberId=M, groupInstanceId=..., clientId=..., clientHost=/h, ...) has
  left group G through explicit `LeaveGroup`; client reason: R" (reason "Removing member M on LeaveGroup;
  client reason: R"), "Assignment received from leader for group G for generation N. The group has K members,
  S of which are static.", "Static member Some(i) of group G with unknown member id rejoins, assigning new
  member id M2, while old member id M1 will be removed.", "Dynamic member with unknown member id joins group G
  in S state. Created a new member id M ..." (2.x: "Dynamic Member ... for this member and add to the group").
  Join reasons: "Adding new member M with group instance id None; client reason: R" and "Member M joining group
  during S; client reason: R" / "Updating metadata for member M during S; client reason: R" (client reasons
  since 3.2, KIP-800). A restarted static member: "Updating metadata for static member M with instance id Some(I);
  client reason: R" (in CompletingRebalance) and "Group's selectedProtocol will change because static member M with
  instance id Some(I) joined with change of protocol; client reason: R" (cause member_joined unless the client
  reason says otherwise); a failed generation: "Error E when storing group assignment during SyncGroup (member: M)".
- 4.x, Java `org.apache.kafka.coordinator.group.GroupMetadataManager`, prefix `[GroupCoordinator id=<broker>
  topic=__consumer_offsets partition=P] `: the same sentences without the `(__consumer_offsets-P)` part and
  with a final period ("... (reason: R).", "Stabilized group G generation N with K members.", "Group G with
  generation N is now empty.", "Member M in group G has failed, removing it from the group." with reason
  "removing member M on heartbeat expiration."), "Member M is joining group during S; client reason: R",
  "Assignment received from leader M for group G ...", "[Group G] Member M has left group through explicit
  `LeaveGroup` request; client reason: R" with prepare reason "explicit `LeaveGroup` request for (M) members.";
  the static reasons above print the instance id bare ("with instance id I") and an empty client reason as
  "not provided"; a failed assignment write prints "Error E when storing group assignmentduring SyncGroup (member:
  M)." (no space after "assignment", as in the source).
  Static membership (3.x Scala and 4.x Java alike): "Static member with groupInstanceId=I and unknown member id
  joins group G in S state. Replacing previously mapped member M with this groupInstanceId." (a replacement, not a
  departure) or "... Created a new member id M for this member and add(ed) to the group.", and "Static member
  which joins during Stable stage and doesn't affect the selected protocol (3.x: selectProtocol) will not
  trigger (a) rebalance." (no group named).
- Client reasons read case-insensitively (a Streams "Shutdown requested" / "Active tasks corrupted", a consumer's
  "rebalance enforced by user" or cooperative "need to revoke partitions and re-join" are enforced rebalances).
- KIP-848 consumer groups (3.7+ preview, 4.0 GA), lines prefixed `[GroupId G] `: "Member M joins the consumer
  group using the consumer protocol." (3.7-3.8: "Member M joins the consumer group.", the static forms likewise),
  "Bumped group epoch to E." (4.1+: "... with metadata hash H."),
  "Computed a new target assignment for epoch E with 'uniform' assignor in Tms...", "Member M new assignment
  state: epoch=E, previousEpoch=P, state=S, ...", "Member M fenced from the group because its session
  expired.", "Member M left the consumer group.", static: "Static member M with instance id I joins the consumer
  group using the consumer protocol.", "Static member with instance id I re-joins the consumer group using the
  consumer protocol. Created a new member M2 to replace the existing member M1.", "Static Member M with instance
  id I (temporarily) left the consumer group.", refused static members: "Static member M with instance id I is
  fenced by existing member M0." (FENCED_INSTANCE_ID) or "... cannot join the group because the instance id is is
  owned by member M0." (UNRELEASED_INSTANCE_ID, the source's doubled "is").
- KIP-1071 streams groups (4.1+, read in a 4.2-era source), lines prefixed `[GroupId G][MemberId M] `: "Member joins
  the streams group.", "Member M left the streams group.", "Bumped streams group epoch to E with metadata hash H and
  validated topic epoch T.", "Member's new assignment state: epoch=E, previousEpoch=P, state=S, ...", and
  "[GroupId G] Streams member M fenced from the group because the member session expired.".
- The coordinator's own moves (what cross-group incidents are explained by, `transforms.incidents`): 3.x Scala
  `GroupMetadataManager` (prefix `[GroupMetadataManager brokerId=<broker>] `): "Finished loading offsets and group
  metadata from __consumer_offsets-P in T milliseconds for epoch E, of which S milliseconds was spent in the
  scheduler." and "Finished unloading __consumer_offsets-P for coordinator epoch E. Removed O cached offsets and G
  cached groups."; 3.x `GroupCoordinator`: "Loading group metadata for G with generation N", "Unloading group
  metadata for G with generation N". 4.x `CoordinatorRuntime` (prefix `[GroupCoordinator id=<broker>] `): "Finished
  loading of metadata from __consumer_offsets-P with epoch E in Tms where Sms was spent in the scheduler. Loaded R
  records which total to B bytes." and "Finished unloading metadata for __consumer_offsets-P with epoch
  OptionalInt[E]." (its "Scheduling ..." lines are not moves: every replica logs "Scheduling unloading" on every
  leadership change, then "Ignored unloading ... since metadata was never loaded."); 4.x `GroupMetadataManager`:
  "Loaded classic group G with K members." (consumer, streams, share alike), "[GroupId=G] Unloading group metadata
  for generation N." and "[GroupId=G] Unloaded group metadata for group epoch E.". Both coordinators' start and
  stop: "Startup complete." and "Shutting down."; the broker's own "[BrokerServer id=N] Transition from STARTED to
  SHUTTING_DOWN" and "[KafkaRaftServer nodeId=N] Kafka Server started" (3.x ZooKeeper mode "[KafkaServer id=N]
  started", "[KafkaServer id=N] shutting down"), where the shipper keeps them.
- Classic, both coordinators: a replaced static member's later requests are refused with "Request memberId=M for
  static member with groupInstanceId=I is fenced by current (4.x: existing) memberId=M2 during operation OP" (OP
  heartbeat, join-group, sync-group, leave-group, offset-commit, txn-offset-commit; the line names no group).
"""

from __future__ import annotations

import re

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent, ParseOutcome
from rebalance_radar.transforms.telemetry.log_line import (
    EventBuilder,
    LogLine,
    MessageRule,
    RuleTable,
    apply_rules,
    instance_id_value,
    split_log_line,
)
from rebalance_radar.transforms.wire.error_codes import ErrorCode as E

SOURCE = TelemetrySource.BROKER_LOG
Kind = HeartbeatEventKind

BROKER_MARKERS: tuple[str, ...] = (
    "GroupCoordinator",
    "GroupMetadataManager",
    "kafka.coordinator.group",
    "[GroupId ",
    "[BrokerServer id=",
    "[KafkaRaftServer nodeId=",
    "[KafkaServer id=",
)

_COORDINATOR_PREFIX = re.compile(r"\[GroupCoordinator (?:(\d+)\]|id=(\d+)(?: topic=\S+)?(?: partition=(\d+))?\])")
_GROUP_CONTEXT = re.compile(r"\[Group(?:Id)? ([^\]\s]+)\]")
_MEMBER_CONTEXT = re.compile(r"\[MemberId ([^\]\s]+)\]")
# A member list as the coordinator prints it: Java `[a, b]`, Scala `Set(a, b)` / `HashSet(a, b)`.
_MEMBER_LIST = re.compile(r"^\s*(?:\w*Set\()?\[?(.*?)[\])]?\s*\.?\s*$")
_MEMBER_METADATA_FIELD = re.compile(r"(memberId|groupInstanceId|clientId|clientHost)=(Some\([^)]*\)|[^,)]*)")
_CLIENT_REASON = re.compile(r"client reason: (.*?)\.?$")

# Members that joined but never sent SyncGroup within the rebalance timeout: 4.x prints a Java set
# ("Removing [m1, m2] on ..."), 3.x a Scala one ("Removing Set(m1) on ...", "HashSet(...)" past four members).
_PENDING_SYNC_EXPIRED = re.compile(r"Removing (?:\w*Set\()?\[?([^\])]*?)[\])]? on pending sync request expiration")
_NEW_MEMBER_REASON = re.compile(r"Adding new member \S+? with group instance id ([^;\s]+)")
_REASON_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"removing member (\S+?) on heartbeat expiration", re.IGNORECASE), "heartbeat_expiration"),
    (re.compile(r"Removing member (\S+?) on LeaveGroup"), "member_left"),
    (re.compile(r"explicit `LeaveGroup` request for \(([^)]*)\) members"), "member_left"),
    (re.compile(r"Adding new member (\S+?) with group instance id"), "member_joined"),
    # A known static member re-joining under a new member id (its restart) while the group completes a rebalance, or
    # in Stable with another protocol: 3.x `with instance id Some(I)`, 4.x `with instance id I`.
    (re.compile(r"Updating metadata for static member (\S+?) with instance id"), "static_member_rejoined"),
    (
        re.compile(r"selectedProtocol will change because static member (\S+?) with instance id"),
        "static_member_rejoined",
    ),
    # The group could not persist the leader's assignment: the generation failed. The Java coordinator (the
    # group-coordinator module, 3.7+ and 4.x) prints "assignment" + "during" without a space.
    (re.compile(r"Error \w+ when storing group assignment ?during SyncGroup \(member: ([^)\s]+)\)"), "failed_previous"),
    (re.compile(r"Member (\S+?) (?:is )?joining group during"), "member_rejoined"),
    (re.compile(r"Updating metadata for member (\S+?) during"), "member_rejoined"),
    (re.compile(r"Leader (\S+?) re-joining group during"), "member_rejoined"),
    (_PENDING_SYNC_EXPIRED, "failed_previous"),
)

# Client reasons (KIP-800) that say why a known member rejoined, matched case-insensitively: the Java client's
# `requestRejoin` reasons (ConsumerCoordinator/AbstractCoordinator 3.2+), `enforceRebalance` ones (Streams
# StreamThread "triggered followup rebalance scheduled for T", "Active tasks corrupted", "Shutdown requested";
# ClassicKafkaConsumer's default "rebalance enforced by user"), and the cooperative protocol's second rebalance
# ("need to revoke partitions and re-join").
_CLIENT_REASON_CAUSES: tuple[tuple[str, str], ...] = (
    ("followup rebalance", "enforced"),
    ("probing", "enforced"),
    ("version probing", "enforced"),
    ("shutdown", "enforced"),
    ("active tasks corrupted", "enforced"),
    ("rebalance enforced by user", "enforced"),
    ("need to revoke partitions and re-join", "enforced"),
    ("subscription", "subscription_change"),
    ("metadata has changed", "subscription_change"),
    ("rebalance failed", "failed_previous"),
    ("need to re-join with the given member-id", "member_joined"),
    ("poll timeout", "poll_timeout"),
)


def pending_sync_expired(reason: str) -> list[str]:
    """Members a rebalance reason says were removed for never sending SyncGroup (empty for any other reason)."""
    found = _PENDING_SYNC_EXPIRED.search(reason)
    return [m.strip() for m in found.group(1).split(",") if m.strip()] if found else []


def member_list(printed: str) -> str:
    """`[a, b]` (4.x), `Set(a, b)` / `HashSet(a, b)` (3.x Scala) -> `a,b`, the list form `details` use."""
    found = _MEMBER_LIST.match(printed)
    inner = found.group(1) if found else printed
    return ",".join(m.strip() for m in inner.split(",") if m.strip())


def cause_of_reason(reason: str) -> tuple[str, str | None, str | None]:
    """(cause, member id, client reason) of a coordinator rebalance reason, cause as `RebalanceCause` names it."""
    client_reason_found = _CLIENT_REASON.search(reason)
    client_reason = client_reason_found.group(1) if client_reason_found else None
    for pattern, cause in _REASON_CAUSES:
        found = pattern.search(reason)
        if found is None:
            continue
        member = found.group(1)
        if cause in ("member_rejoined", "static_member_rejoined"):
            said = (client_reason or "").lower()
            fallback = "member_joined" if cause == "static_member_rejoined" else "unknown"
            cause = next((c for key, c in _CLIENT_REASON_CAUSES if key in said), fallback)
        return cause, (member if "," not in member else None), client_reason
    return "unknown", None, client_reason


def _group(found_group: str | None, line: LogLine) -> str | None:
    if found_group:
        return found_group
    context = _GROUP_CONTEXT.search(line.message)
    return context.group(1) if context else None


def _member(found_member: str | None, line: LogLine) -> str | None:
    """A member named in the message, else the `[MemberId M]` context of the 4.x streams-group lines."""
    if found_member:
        return found_member
    context = _MEMBER_CONTEXT.search(line.message)
    return context.group(1) if context else None


def _coordinator_details(line: LogLine, offsets_partition: str | None = None) -> dict[str, str]:
    details: dict[str, str] = {}
    prefix = _COORDINATOR_PREFIX.search(line.message)
    if prefix is not None:
        broker_scala, broker_java, partition = prefix.groups()
        details["coordinator"] = broker_scala or broker_java
        offsets_partition = offsets_partition or partition
    if offsets_partition is not None:
        details["offsets_partition"] = offsets_partition
    if line.logger:
        details["logger"] = line.logger
    return details


def _rebalance_prepare(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    reason = m.group("reason").removesuffix(".")
    cause, member, client_reason = cause_of_reason(reason)
    details = _coordinator_details(line, m.group("partition"))
    details.update(state=m.group("state"), cause=cause, client_reason=client_reason)
    unsynced = pending_sync_expired(reason)
    if unsynced:
        details["sync_expired_members"] = ",".join(unsynced)
    added = _NEW_MEMBER_REASON.match(reason)
    if added is not None:  # the member this prepares for is new to the group (its own join line is DEBUG on 3.x)
        details["new_member"] = "true"
    return line.event(
        Kind.REBALANCE_PREPARE,
        SOURCE,
        group_id=m.group("group"),
        member_id=member,
        group_instance_id=instance_id_value(added.group(1)) if added is not None else None,
        generation=int(m.group("generation")),
        reason=reason,
        details=details,
    )


def _rebalance_stable(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line, m.group(3))
    details["member_count"] = m.group(4)
    return line.event(Kind.REBALANCE_STABLE, SOURCE, group_id=m.group(1), generation=int(m.group(2)), details=details)


def _group_empty(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.GROUP_EMPTY,
        SOURCE,
        group_id=m.group(1),
        generation=int(m.group(2)),
        details=_coordinator_details(line, m.group(3)),
    )


def _member_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.MEMBER_EXPIRED,
        SOURCE,
        group_id=m.group(2),
        member_id=m.group(1),
        reason="heartbeat expiration",
        details=_coordinator_details(line),
    )


def _heartbeat_expiration_reason(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.MEMBER_EXPIRED,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group(1),
        reason="heartbeat expiration",
        details=_coordinator_details(line),
    )


def _member_left_explicitly(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    member_text = m.group("member")
    details = _coordinator_details(line)
    member_id, instance_id, client_id, host = member_text, None, None, None
    if member_text.startswith("MemberMetadata("):
        fields = dict(_MEMBER_METADATA_FIELD.findall(member_text))
        member_id = fields.get("memberId", member_text)
        instance_id = instance_id_value(fields.get("groupInstanceId"))
        client_id = fields.get("clientId")
        host = (fields.get("clientHost") or "").lstrip("/") or None
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(m.group("group"), line),
        member_id=member_id,
        group_instance_id=instance_id,
        client_id=client_id,
        host=host,
        reason=m.group("reason"),
        details=details,
    )


def _removing_on_leave(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group(1),
        reason=m.group(2),
        details=_coordinator_details(line),
    )


def _consumer_group_leave(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group(1),
        details={**_coordinator_details(line), "protocol": "consumer"},
    )


def _static_member_temporarily_left(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group(1),
        group_instance_id=m.group(2),
        details={**_coordinator_details(line), "temporary": "true"},
    )


def _static_member_left(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group(1),
        group_instance_id=m.group(2),
        details={**_coordinator_details(line), "protocol": "consumer", "static": "true"},
    )


def _member_joining(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update(state=m.group(2), rejoin="true")  # a member already in the group
    return line.event(
        Kind.JOIN, SOURCE, group_id=_group(None, line), member_id=m.group(1), reason=m.group(3), details=details
    )


def _updating_member_metadata(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update(state=m.group(2), metadata_update="true")
    return line.event(
        Kind.JOIN, SOURCE, group_id=_group(None, line), member_id=m.group(1), reason=m.group(3), details=details
    )


def _adding_new_member(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.JOIN,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group(1),
        group_instance_id=instance_id_value(m.group(2)),
        reason=m.group(3),
        details={**_coordinator_details(line), "new_member": "true"},
    )


def _dynamic_member_unknown_id(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """Classic "... joins group G in S state" (4.x also "in state S"), or KIP-848 "... joins the consumer group"
    (a classic-protocol member of a consumer group, context `[GroupId G]`)."""
    details = _coordinator_details(line)
    details.update(state=m.group("state") or m.group("state_"), pending="true")
    if m.group("group") is None:
        details.update(protocol="classic", group_protocol=_KIP848_ONLY_PROTOCOL)
    return line.event(
        Kind.JOIN, SOURCE, group_id=_group(m.group("group"), line), member_id=m.group("member"), details=details
    )


def _pending_member_joins(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details["state"] = m.group(3)
    return line.event(Kind.JOIN, SOURCE, group_id=m.group(2), member_id=m.group(1), details=details)


# 3.7-3.8 consumer groups took only `group.protocol=consumer` members; classic members joined them from 3.9 on, when
# the join line started naming the protocol.
_KIP848_ONLY_PROTOCOL = "consumer"


def _joins_consumer_group(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    # the member's protocol, and the group's (a classic member "joins the consumer group using the classic protocol")
    details.update(protocol=m.group(2) or _KIP848_ONLY_PROTOCOL, group_protocol=_KIP848_ONLY_PROTOCOL)
    return line.event(Kind.JOIN, SOURCE, group_id=_group(None, line), member_id=m.group(1), details=details)


def _subscription_updated(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update({"protocol": _KIP848_ONLY_PROTOCOL, f"subscribed_{m.group('what')}": m.group("to")})
    return line.event(
        Kind.SUBSCRIPTION, SOURCE, group_id=_group(None, line), member_id=m.group("member"), details=details
    )


def _static_member_replaced(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update(cause="static_member_replaced", new_member_id=m.group(3))
    return line.event(
        Kind.MEMBER_REMOVED,
        SOURCE,
        group_id=_group(m.group(2), line),
        member_id=m.group(4),
        group_instance_id=instance_id_value(m.group(1)),
        reason="static member replaced",
        details=details,
    )


def _assignment_from_leader(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update(member_count=m.group(4), static_member_count=m.group(5), leader="true")
    return line.event(
        Kind.ASSIGNMENT,
        SOURCE,
        group_id=m.group(2),
        member_id=m.group(1),
        generation=int(m.group(3)),
        details=details,
    )


def _static_member_joins(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """Kafka 4.x/3.x classic static join: a known instance id replaces its member (no departure), or a new one."""
    details = _coordinator_details(line)
    details.update(state=m.group("state"), static="true")
    member_id = m.group("new")
    if m.group("old") is not None:
        details["replaced_member_id"] = m.group("old")
    else:
        details["new_member"] = "true"
    return line.event(
        Kind.JOIN,
        SOURCE,
        group_id=m.group("group"),
        member_id=member_id,
        group_instance_id=instance_id_value(m.group("instance")),
        reason="static member replaced" if m.group("old") is not None else "static member joined",
        details=details,
    )


def _static_rejoin_without_rebalance(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """The coordinator kept the generation for a returning static member (the line names no group or member)."""
    details = _coordinator_details(line)
    details.update(static="true", rebalance="false")
    return line.event(
        Kind.JOIN,
        SOURCE,
        group_id=_group(None, line),
        reason="static member rejoined without rebalance",
        details=details,
    )


def _static_consumer_group_join(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """KIP-848 static member joining (new) or re-joining under its instance id (replacing the existing member)."""
    details = {
        **_coordinator_details(line),
        "protocol": m.group("protocol") or _KIP848_ONLY_PROTOCOL,
        "group_protocol": _KIP848_ONLY_PROTOCOL,
        "static": "true",
    }
    if m.group("old") is not None:
        details["replaced_member_id"] = m.group("old")
    return line.event(
        Kind.JOIN,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group("member") or m.group("new"),
        group_instance_id=m.group("instance"),
        details=details,
    )


def _group_epoch_bumped(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    protocol = "streams" if m.group("streams") else "consumer"
    details.update(
        group_epoch=m.group("epoch"),
        metadata_hash=m.group("hash"),
        validated_topology_epoch=m.group("topology"),
        protocol=protocol,
        cause="epoch_bump",
    )
    return line.event(
        Kind.REBALANCE_PREPARE, SOURCE, group_id=_group(None, line), member_id=_member(None, line), details=details
    )


def _target_assignment(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update(target_assignment_epoch=m.group(1), assignor=m.group(2), duration_ms=m.group(3))
    return line.event(Kind.ASSIGNMENT, SOURCE, group_id=_group(None, line), details=details)


def _member_assignment_state(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _coordinator_details(line)
    details.update(previous_member_epoch=m.group("previous"), member_state=m.group("state"))
    if m.group("member") is None:
        details["protocol"] = "streams"
        details.update(streams_tasks(line.message))
    return line.event(
        Kind.ASSIGNMENT,
        SOURCE,
        group_id=_group(None, line),
        member_id=_member(m.group("member"), line),
        member_epoch=int(m.group("epoch")),
        details=details,
    )


# A streams member's tasks as the coordinator prints them: `(active=[0-0@5, 1-2@5], standby=[], warmup=[])`
# (4.3, `TasksTupleWithEpochs`: subtopology-partition@assignment epoch) or `(active=[0-0, 1-2], ...)` (4.1/4.2).
_STREAMS_TASKS = re.compile(
    r"(?P<name>assignedTasks|tasksPendingRevocation)=\(active=\[(?P<active>[^\]]*)\], "
    r"standby=\[(?P<standby>[^\]]*)\], warmup=\[(?P<warmup>[^\]]*)\]\)"
)
_STREAMS_TASK = re.compile(r"(\w+)-(\d+)(?:@-?\d+)?")


def streams_tasks(message: str) -> dict[str, str]:
    """`active_tasks`, `standby_tasks`, `warmup_tasks` (Streams' own `0_1` spelling, comma-joined) and the active
    tasks pending revocation, from a coordinator line printing a streams member's tasks; empty when it prints none."""
    details: dict[str, str] = {}
    for found in _STREAMS_TASKS.finditer(message):
        prefix = "" if found.group("name") == "assignedTasks" else "pending_"
        for kind in ("active", "standby", "warmup"):
            if prefix and kind != "active":
                continue
            ids = [f"{s}_{p}" for s, p in _STREAMS_TASK.findall(found.group(kind))]
            details[f"{prefix}{kind}_tasks"] = ",".join(ids)
            details[f"{prefix}{kind}_task_count"] = str(len(ids))
    return details


def _topology(phase: str) -> EventBuilder:
    """KIP-1071 topology set-up (GroupMetadataManager, InternalTopicManager 4.1+): the coordinator configures a
    member's topology, validates its topics and marks its epoch initialized; the group epoch bump follows on its own
    line. None of it is a membership change."""

    def build(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
        found = m.groupdict()
        epoch = found.get("epoch") or found.get("epoch41")
        details = _coordinator_details(line)
        details.update(
            protocol="streams",
            topology_phase="internal_topics_missing" if found.get("missing") is not None else phase,
            topology_epoch=epoch,
            elapsed_ms=found.get("elapsed"),
            metadata_hash=found.get("hash"),
            missing_internal_topics=found.get("missing"),
        )
        return line.event(
            Kind.TOPOLOGY,
            SOURCE,
            group_id=_group(None, line),
            member_id=_member(None, line),
            reason=(found.get("error") or "").strip() or None,
            details=details,
        )

    return build


_STREAMS_MEMBER_FIELD = re.compile(
    r"\b(memberEpoch|previousMemberEpoch|state|clientId|clientHost|rebalanceTimeoutMs|topologyEpoch|processId)="
    r"([^,\]]*)"
)


def _streams_member_metadata_updated(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """4.2-4.3 GroupMetadataManager (INFO; 4.2.0 spells it "metdata"): "Member updated its member metadata to
    StreamsGroupMember[memberId=M, memberEpoch=E, ..., clientId=C, clientHost=/H, rebalanceTimeoutMs=T,
    topologyEpoch=K, processId=P, ...]." -- a streams member (re)joining or changing what it told the coordinator;
    its client id and host name the member."""
    fields = dict(_STREAMS_MEMBER_FIELD.findall(line.message))
    details = _coordinator_details(line)
    details.update(
        protocol="streams",
        phase="metadata_updated",
        member_state=fields.get("state"),
        previous_member_epoch=fields.get("previousMemberEpoch"),
        topology_epoch=fields.get("topologyEpoch"),
        process_id=fields.get("processId"),
        rebalance_timeout_ms=fields.get("rebalanceTimeoutMs"),
        **streams_tasks(line.message),
    )
    epoch = fields.get("memberEpoch", "")
    return line.event(
        Kind.JOIN,
        SOURCE,
        group_id=_group(None, line),
        member_id=_member(m.group("member"), line),
        member_epoch=int(epoch) if epoch.lstrip("-").isdigit() else None,
        client_id=fields.get("clientId") or None,
        host=(fields.get("clientHost") or "").lstrip("/") or None,
        details={k: v for k, v in details.items() if v},
    )


def _streams_assignment_configs_changed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = {**_coordinator_details(line), "protocol": "streams", "change": "configs_changed", "configs": m.group(1)}
    return line.event(
        Kind.ASSIGNMENT, SOURCE, group_id=_group(None, line), member_id=_member(None, line), details=details
    )


def _streams_shutdown_requested(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.SHUTDOWN_REQUESTED,
        SOURCE,
        group_id=_group(None, line),
        member_id=_member(None, line),
        reason="a member requested the application to shut down",
        details={**_coordinator_details(line), "protocol": "streams"},
    )


def _fenced_session_expired(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.MEMBER_EXPIRED,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group("member"),
        reason="session expired",
        details={**_coordinator_details(line), "protocol": "streams" if m.group("streams") else "consumer"},
    )


def _fenced_other(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = {**_coordinator_details(line), "fenced": "true"}
    if m.group("streams"):
        details["protocol"] = "streams"
    return line.event(
        Kind.MEMBER_REMOVED,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group("member"),
        reason=m.group("reason").rstrip("."),
        details=details,
    )


# The operation a static member's refused request was (3.x Scala `validateStaticMember`, 4.x
# `ClassicGroup.validateMember`); a refused LeaveGroup has no kind of its own and reads as a failed heartbeat.
_FENCED_OPERATION_KINDS: dict[str, HeartbeatEventKind] = {
    "heartbeat": Kind.HEARTBEAT_FAILED,
    "join-group": Kind.JOIN_FAILED,
    "sync-group": Kind.SYNC_FAILED,
    "offset-commit": Kind.COMMIT_FAILED,
    "txn-offset-commit": Kind.COMMIT_FAILED,
}


def _static_request_fenced(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """A request from a static member's replaced (zombie) member id, refused with FENCED_INSTANCE_ID. The line
    names no group (neither the 3.x nor the 4.x coordinator prints one), so only the line's context can."""
    operation = m.group("operation")
    details = _coordinator_details(line)
    details.update(operation=operation, current_member_id=m.group("current"), static="true")
    return line.event(
        _FENCED_OPERATION_KINDS.get(operation, Kind.HEARTBEAT_FAILED),
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group("member"),
        group_instance_id=instance_id_value(m.group("instance")),
        error=E.FENCED_INSTANCE_ID.name,
        reason=f"static member fenced during {operation}",
        details=details,
    )


def _consumer_group_static_refused(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """KIP-848: a static member's heartbeat refused because another member holds (or still owns) its instance id."""
    fenced = m.group("fenced") is not None
    details = {**_coordinator_details(line), "protocol": "consumer", "static": "true"}
    details["current_member_id"] = m.group("current").rstrip(".")
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        group_id=_group(None, line),
        member_id=m.group("member"),
        group_instance_id=m.group("instance"),
        error=E.FENCED_INSTANCE_ID.name if fenced else E.UNRELEASED_INSTANCE_ID.name,
        reason="instance id fenced by existing member" if fenced else "instance id still owned by another member",
        details=details,
    )


def _classic_static_left(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """4.x classic group: a static member's explicit LeaveGroup (an admin removal or a closing client); unlike a
    KIP-848 static member's temporary leave (epoch -2) it is a departure."""
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(m.group("group"), line),
        member_id=m.group("member"),
        group_instance_id=instance_id_value(m.group("instance")),
        reason=m.group("reason"),
        details={**_coordinator_details(line), "static": "true"},
    )


def _pending_member_left(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(m.group("group"), line),
        member_id=m.group("member"),
        reason=m.group("reason"),
        details={**_coordinator_details(line), "pending": "true"},
    )


def _rebalance_not_completed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.JOIN_FAILED,
        SOURCE,
        group_id=m.group(1),
        reason="could not complete rebalance because no members rejoined",
        details=_coordinator_details(line),
    )


def _streams_group_join(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.JOIN,
        SOURCE,
        group_id=_group(None, line),
        member_id=_member(None, line),
        details={**_coordinator_details(line), "protocol": "streams"},
    )


def _streams_group_leave(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        group_id=_group(None, line),
        member_id=_member(m.group(1), line),
        details={**_coordinator_details(line), "protocol": "streams"},
    )


def _pending_member_expired(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.MEMBER_EXPIRED,
        SOURCE,
        group_id=m.group(2),
        member_id=m.group(1),
        reason="pending member session timeout",
        details={**_coordinator_details(line), "pending": "true"},
    )


def _members_removed_unjoined(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.MEMBER_REMOVED,
        SOURCE,
        group_id=m.group(1),
        reason=f"members who haven't {m.group(2)}",
        details={**_coordinator_details(line), "members": member_list(m.group(3))},
    )


# The broker a coordinator-move or lifecycle line names: 3.x `[GroupMetadataManager brokerId=N]`, the broker's own
# `[BrokerServer id=N]`, `[KafkaRaftServer nodeId=N]`, `[KafkaServer id=N]` (the coordinator's: `_COORDINATOR_PREFIX`).
_BROKER_PREFIX = re.compile(
    r"\[(?:GroupMetadataManager brokerId|BrokerServer id|KafkaRaftServer nodeId|KafkaServer id)=(\d+)\]"
)
_OPTIONAL_INT = re.compile(r"OptionalInt\[(-?\d+)\]")


def _broker_details(line: LogLine, offsets_partition: str | None = None) -> dict[str, str]:
    """`_coordinator_details`, with the broker also read from the non-coordinator prefixes."""
    details = _coordinator_details(line, offsets_partition)
    if "coordinator" not in details:
        found = _BROKER_PREFIX.search(line.message)
        if found is not None:
            details["coordinator"] = found.group(1)
    return details


def _epoch_text(printed: str | None) -> str | None:
    """`5`, `OptionalInt[5]` -> `5`; `OptionalInt.empty` (the topic was deleted) -> None."""
    if printed is None:
        return None
    found = _OPTIONAL_INT.search(printed)
    return found.group(1) if found else (printed if printed.lstrip("-").isdigit() else None)


class _LoadedMatch:
    """The 3.x and 4.x "Finished loading" wordings under one set of group names."""

    def __init__(self, found: re.Match[str]) -> None:
        self._found = found

    def group(self, name: str) -> str | None:
        value = self._found.group(name)
        if value is None and name in ("epoch", "load_ms"):
            return self._found.group(f"{name}4")
        return value


def _partition_loaded(m: _LoadedMatch, line: LogLine) -> HeartbeatEvent:
    details = _broker_details(line, m.group("partition"))
    details.update(epoch=_epoch_text(m.group("epoch")), load_ms=m.group("load_ms"))
    return line.event(Kind.COORDINATOR_LOADED, SOURCE, details=details)


def _partition_unloaded(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _broker_details(line, m.group("partition"))
    details["epoch"] = _epoch_text(m.group("epoch"))
    if m.groupdict().get("groups"):
        details["groups_removed"] = m.group("groups")
    return line.event(Kind.COORDINATOR_UNLOADED, SOURCE, details=details)


def _group_loaded(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _broker_details(line)
    if m.groupdict().get("type"):
        details["group_type"] = m.group("type")
    if m.groupdict().get("members"):
        details["member_count"] = m.group("members")
    generation = m.groupdict().get("generation")
    return line.event(
        Kind.GROUP_LOADED,
        SOURCE,
        group_id=m.group("group"),
        generation=int(generation) if generation else None,
        details=details,
    )


def _group_unloaded(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    generation = m.groupdict().get("generation")
    return line.event(
        Kind.GROUP_UNLOADED,
        SOURCE,
        group_id=_group(m.groupdict().get("group"), line) or _group_id_context(line),
        generation=int(generation) if generation else None,
        details=_broker_details(line),
    )


_GROUP_ID_EQUALS = re.compile(r"\[GroupId=([^\]\s]+)\]")


def _group_id_context(line: LogLine) -> str | None:
    """The 4.x `[GroupId=G]` context of the unload lines (the other 4.x lines print `[GroupId G]`)."""
    found = _GROUP_ID_EQUALS.search(line.message)
    return found.group(1) if found else None


def _coordinator_started(m: re.Match[str], line: LogLine) -> HeartbeatEvent | None:
    details = _broker_details(line)
    if "coordinator" not in details:
        return None  # "Startup complete." of another component
    return line.event(Kind.COORDINATOR_STARTED, SOURCE, details=details)


def _coordinator_stopping(m: re.Match[str], line: LogLine) -> HeartbeatEvent | None:
    details = _broker_details(line)
    if "coordinator" not in details:
        return None
    return line.event(Kind.COORDINATOR_STOPPING, SOURCE, details=details)


# Order matters: a prepare line quotes other sentences (join, leave, expiration) inside its reason.
RULES = RuleTable.of(
    (
        MessageRule(
            "Preparing to rebalance",
            re.compile(
                r"Preparing to rebalance group (?P<group>\S+) in state (?P<state>\w+) with old generation "
                r"(?P<generation>-?\d+)(?: \(__consumer_offsets-(?P<partition>\d+)\))? "
                r"\(reason: (?P<reason>.*)\)\.?\s*$"
            ),
            _rebalance_prepare,
        ),
        MessageRule(
            "Stabilized group",
            re.compile(
                r"Stabilized group (\S+) generation (\d+)(?: \(__consumer_offsets-(\d+)\))?(?: with (\d+) members)?"
            ),
            _rebalance_stable,
        ),
        MessageRule(
            "is now empty",
            re.compile(r"Group (\S+) with generation (\d+) is now empty(?: \(__consumer_offsets-(\d+)\))?"),
            _group_empty,
        ),
        MessageRule(
            "has failed, removing",
            re.compile(r"Member (\S+) in group (\S+) has failed, removing it from the group"),
            _member_failed,
        ),
        MessageRule(  # 4.x classic; the generic rule below would not read the instance id
            "through explicit",
            re.compile(
                r"Static Member (?P<member>\S+) with instance id (?P<instance>\S+) has left group (?:(?P<group>\S+) )?"
                r"through explicit `LeaveGroup` request(?:; client reason: (?P<reason>.*?))?\s*$"
            ),
            _classic_static_left,
        ),
        MessageRule(  # 3.x "Pending member with memberId=M has left group G ...", 4.x "[Group G] Pending member M ..."
            "through explicit",
            re.compile(
                r"Pending member (?:with memberId=)?(?P<member>\S+) has left group (?:(?P<group>\S+) )?"
                r"through explicit `LeaveGroup` request(?:; client reason: (?P<reason>.*?))?\s*$"
            ),
            _pending_member_left,
        ),
        MessageRule(
            "through explicit",
            re.compile(
                r"Member (?P<member>MemberMetadata\(.*?\)|\S+) has left group (?:(?P<group>\S+) )?through explicit "
                r"`LeaveGroup`(?: request)?(?:; client reason: (?P<reason>.*?))?\s*$"
            ),
            _member_left_explicitly,
        ),
        MessageRule(
            "with unknown member id rejoins",
            re.compile(
                r"Static member (\S+?)(?: of group (\S+))? with unknown member id rejoins, assigning new member id "
                r"(\S+?), while old member(?: id)? (\S+?) will be removed"
            ),
            _static_member_replaced,
        ),
        MessageRule(
            "Dynamic ",
            re.compile(
                r"Dynamic [Mm]ember with unknown member id joins (?:group (?P<group>\S+) in (?:state (?P<state>\w+)|"
                r"(?P<state_>\w+) state)|the consumer group)\. Created a new member id (?P<member>[^\s.]+)"
            ),
            _dynamic_member_unknown_id,
        ),
        MessageRule(
            "Pending dynamic member",
            re.compile(r"Pending dynamic member with id (\S+) joins group (\S+) in (\w+) state"),
            _pending_member_joins,
        ),
        MessageRule(
            "Assignment received from leader",
            re.compile(
                r"Assignment received from leader (?:(\S+) )?for group (\S+) for generation (\d+)\. "
                r"The group has (\d+) members, (\d+) of which are static"
            ),
            _assignment_from_leader,
        ),
        MessageRule(
            "unknown member id joins group",
            re.compile(
                r"Static member with groupInstanceId=(?P<instance>\S+?) and unknown member id joins group "
                r"(?P<group>\S+) in (?P<state>\w+) state\. (?:Replacing previously mapped member (?P<old>\S+) "
                r"with this groupInstanceId|Created a new member id (?P<new>\S+) for this member)"
            ),
            _static_member_joins,
        ),
        MessageRule(
            "will not trigger",
            re.compile(r"Static member which joins during Stable stage .*will not trigger (?:a )?rebalance"),
            _static_rejoin_without_rebalance,
        ),
        MessageRule(  # 3.9+ "... using the P protocol"; 3.7-3.8 end at "the consumer group." (3.8: "Static member
            # with unknown member id and instance id I re-joins ... Created a new member M2 to replace ...")
            "joins the consumer group",
            re.compile(
                r"Static member (?:(?P<member>\S+) )?with (?:unknown member id and )?instance id (?P<instance>\S+) "
                r"(?:re-)?joins the consumer group(?: using the (?P<protocol>\w+) protocol)?(?:\. Created a new member "
                r"(?P<new>\S+) to replace the existing member (?P<old>[^\s.]+))?"
            ),
            _static_consumer_group_join,
        ),
        MessageRule(
            "joins the consumer group",
            re.compile(r"Member (\S+) joins the consumer group(?: using the (\w+) protocol)?"),
            _joins_consumer_group,
        ),
        MessageRule(  # KIP-848 3.7-3.9 at INFO (4.x at DEBUG); a new member's first subscription is logged so too
            "updated its subscribed",
            re.compile(r"Member (?P<member>\S+) updated its subscribed (?P<what>topics|regex) to: (?P<to>.*?)\.?\s*$"),
            _subscription_updated,
        ),
        MessageRule(
            "group epoch to",
            re.compile(
                r"Bumped (?P<streams>streams )?group epoch to (?P<epoch>\d+)(?: with metadata hash (?P<hash>-?\d+))?"
                r"(?: and validated topic epoch (?P<topology>-?\d+))?"
            ),
            _group_epoch_bumped,
        ),
        MessageRule(
            "Computed a new target assignment",
            re.compile(r"Computed a new target assignment for epoch (\d+) with '([^']*)' assignor(?: in (\d+)ms)?"),
            _target_assignment,
        ),
        MessageRule(  # consumer groups "Member M new ...", streams groups "[MemberId M] Member's new ..."
            "new assignment state",
            re.compile(
                r"Member(?: (?P<member>\S+)|'s) new assignment state: epoch=(?P<epoch>-?\d+), "
                r"previousEpoch=(?P<previous>-?\d+), state=(?P<state>\w+)"
            ),
            _member_assignment_state,
        ),
        MessageRule(
            "session expired",
            # 3.7 says "its session expired", 4.x "the member session expired"; streams groups "Streams member M"
            re.compile(
                r"(?:(?P<streams>Streams m)|M)ember (?P<member>\S+) fenced from the group because "
                r"(?:its|the member) session expired"
            ),
            _fenced_session_expired,
        ),
        MessageRule(
            "fenced from the group",
            re.compile(
                r"(?:(?P<streams>Streams m)|M)ember (?P<member>\S+) fenced from the group because (?P<reason>.*)$"
            ),
            _fenced_other,
        ),
        MessageRule(
            "Member joins the streams group",
            re.compile(r"Member joins the streams group"),
            _streams_group_join,
        ),
        MessageRule(  # 4.2+ "Configuring the topology E", 4.1 "... the topology StreamsTopology[topologyEpoch=E, ..."
            "Configuring the topology",
            re.compile(
                r"Configuring the topology (?:(?P<epoch>-?\d+)|StreamsTopology\[topologyEpoch=(?P<epoch41>-?\d+))"
            ),
            _topology("configuring"),
        ),
        MessageRule(
            "initialized the topology with epoch",
            re.compile(r"Member initialized the topology with epoch (?P<epoch>-?\d+)"),
            _topology("initialized"),
        ),
        MessageRule(
            "joined with stale topology epoch",
            re.compile(r"Member joined with stale topology epoch (?P<epoch>-?\d+)"),
            _topology("stale_member"),
        ),
        MessageRule(  # InternalTopicManager: 4.3 "[GroupId G][MemberId M] Valid ... in Nms, ...", 4.2 no prefix, 4.1
            # no "in Nms"
            "Valid topic configuration found",
            re.compile(
                r"Valid topic configuration found(?: in (?P<elapsed>\d+)ms)?, "
                r"(?:topology epoch (?P<epoch>-?\d+) is now initialized"
                r"|but internal topics are missing for topology epoch (?P<epoch41>-?\d+): (?P<missing>.*?))"
                r"\.?\s*$"
            ),
            _topology("validated"),
        ),
        MessageRule(
            "Topic configuration failed for topology epoch",
            re.compile(
                r"Topic configuration failed for topology epoch (?P<epoch>-?\d+)(?: in (?P<elapsed>\d+)ms)?: "
                r"(?P<error>.*?)\s*$"
            ),
            _topology("invalid"),
        ),
        MessageRule(  # streams groups only (a consumer group's "Computed new metadata hash" names no member)
            "Computed new metadata hash",
            re.compile(r"\[MemberId [^\]]+\] Computed new metadata hash: (?P<hash>-?\d+)"),
            _topology("metadata_hash"),
        ),
        MessageRule(  # 4.3 "... member metadata to ...", 4.2.0 "... member metdata to ..." (the source's spelling)
            "updated its member met",
            re.compile(r"Member updated its member meta?data to StreamsGroupMember\[memberId=(?P<member>[^,\]]+)"),
            _streams_member_metadata_updated,
        ),
        MessageRule(
            "Assignment configurations changed",
            re.compile(r"Assignment configurations changed to (\{.*?\})\. Triggering rebalance"),
            _streams_assignment_configs_changed,
        ),
        MessageRule(
            "Shutdown requested for the streams application",
            re.compile(r"Shutdown requested for the streams application"),
            _streams_shutdown_requested,
        ),
        MessageRule(
            "left the streams group",
            re.compile(r"Member (\S+) left the streams group"),
            _streams_group_leave,
        ),
        MessageRule(
            "is fenced by",
            re.compile(
                r"Request memberId=(?P<member>\S+) for static member with groupInstanceId=(?P<instance>\S+) is fenced "
                r"by (?:current|existing) memberId=(?P<current>\S+) during operation (?P<operation>[\w-]+)"
            ),
            _static_request_fenced,
        ),
        MessageRule(
            "with instance id",
            re.compile(
                r"Static member (?P<member>\S+) with instance id (?P<instance>\S+) (?:(?P<fenced>is fenced by existing "
                r"member)|cannot join the group because the instance id is(?: is)? owned by member) (?P<current>\S+)"
            ),
            _consumer_group_static_refused,
        ),
        MessageRule(
            "could not complete rebalance",
            re.compile(r"Group (\S+) could not complete rebalance because no members rejoined"),
            _rebalance_not_completed,
        ),
        MessageRule(
            "temporarily left the consumer group",
            re.compile(r"Static [Mm]ember (\S+) with instance id (\S+) temporarily left the consumer group"),
            _static_member_temporarily_left,
        ),
        MessageRule(
            "left the consumer group",
            re.compile(r"Static [Mm]ember (\S+) with instance id (\S+) left the consumer group"),
            _static_member_left,
        ),
        MessageRule(
            "left the consumer group", re.compile(r"Member (\S+) left the consumer group"), _consumer_group_leave
        ),
        MessageRule(
            "after session timeout expiration",
            re.compile(r"Pending member (\S+) in group (\S+) has been removed after session timeout expiration"),
            _pending_member_expired,
        ),
        MessageRule(
            "who haven't",
            re.compile(
                r"Group (\S+) removed (?:dynamic )?members who haven't (joined|sent their sync requests?):? (.*)$"
            ),
            _members_removed_unjoined,
        ),
        # The coordinator's moves and its broker's start and stop (see the module docstring).
        MessageRule(
            "Finished loading",
            re.compile(
                r"Finished loading (?:offsets and group metadata|of metadata) from "
                r"__consumer_offsets-(?P<partition>\d+)"
                r"(?: in (?P<load_ms>\d+) milliseconds for epoch (?P<epoch>-?\d+)| with epoch (?P<epoch4>-?\d+) in "
                r"(?P<load_ms4>\d+)ms)"
            ),
            lambda m, line: _partition_loaded(_LoadedMatch(m), line),
        ),
        MessageRule(
            "Finished unloading",
            re.compile(
                r"Finished unloading (?:metadata for )?__consumer_offsets-(?P<partition>\d+) (?:for coordinator epoch|"
                r"with epoch) (?P<epoch>\S+?)\.?(?: Removed \d+ cached offsets and (?P<groups>\d+) cached groups)?"
                r"\.?\s*$"
            ),
            _partition_unloaded,
        ),
        MessageRule(
            "Loading group metadata for",
            re.compile(r"Loading group metadata for (?P<group>\S+) with generation (?P<generation>-?\d+)"),
            _group_loaded,
        ),
        MessageRule(
            "] Loaded ",
            re.compile(
                r"\] Loaded (?P<type>classic|consumer|streams|share) group (?P<group>\S+) with "
                r"(?P<members>\d+) members"
            ),
            _group_loaded,
        ),
        MessageRule(
            "nloading group metadata for",
            re.compile(r"Unloading group metadata for (?:(?P<group>\S+) with )?generation (?P<generation>-?\d+)"),
            _group_unloaded,
        ),
        MessageRule(
            "Unloaded group metadata",
            re.compile(r"Unloaded group metadata for group epoch (?P<generation>-?\d+)"),
            _group_unloaded,
        ),
        MessageRule("Startup complete", re.compile(r"Startup complete\.?\s*$"), _coordinator_started),
        MessageRule("Kafka Server started", re.compile(r"Kafka Server started"), _coordinator_started),
        MessageRule("] started", re.compile(r"\[KafkaServer id=\d+\] started"), _coordinator_started),
        MessageRule("Shutting down", re.compile(r"\]:? Shutting down\.?\s*$"), _coordinator_stopping),
        MessageRule("to SHUTTING_DOWN", re.compile(r"Transition from \w+ to SHUTTING_DOWN"), _coordinator_stopping),
        MessageRule("] shutting down", re.compile(r"\[KafkaServer id=\d+\] shutting down"), _coordinator_stopping),
        # The coordinator's rebalance reasons, quoted on their own (the seeds quote them that way).
        MessageRule(
            "on heartbeat expiration",
            re.compile(r"removing member (\S+?) on heartbeat expiration", re.IGNORECASE),
            _heartbeat_expiration_reason,
        ),
        MessageRule(
            "on LeaveGroup",
            re.compile(r"Removing member (\S+) on LeaveGroup(?:; client reason: (.*?))?\s*$"),
            _removing_on_leave,
        ),
        MessageRule(
            "joining group during",
            re.compile(r"Member (\S+) (?:is )?joining group during (\w+)(?:; client reason: (.*?))?\s*$"),
            _member_joining,
        ),
        MessageRule(
            "Updating metadata for member",
            re.compile(r"Updating metadata for member (\S+) during (\w+)(?:; client reason: (.*?))?\s*$"),
            _updating_member_metadata,
        ),
        MessageRule(
            "Adding new member",
            re.compile(r"Adding new member (\S+) with group instance id ([^;\s]+?)(?:; client reason: (.*?))?\s*$"),
            _adding_new_member,
        ),
    )
)


def looks_like_broker_log(text: str) -> bool:
    """Whether a line carries a group-coordinator marker (for counting unrecognised lines per source)."""
    return any(marker in text for marker in BROKER_MARKERS)


def parse_broker_message(line: LogLine) -> HeartbeatEvent | None:
    """The heartbeat event of a broker log line already split into its envelope, or None."""
    return apply_rules(RULES, line)


def parse_broker_log_line(text: str, record_timestamp_ms: int, tz: str = "UTC") -> ParseOutcome:
    """One plain-text broker log line -> outcome (the line's own time, else the record's)."""
    event = parse_broker_message(split_log_line(text, record_timestamp_ms, tz))
    if event is None:
        return ParseOutcome.unrecognised(SOURCE, "no known group-coordinator message")
    return ParseOutcome((event,), SOURCE)
