"""zombie_commit and offset_regression: commits from members that are no longer who they think they are.

From telemetry (agent, protocol frames, client logs): a commit or a commit failure with one of the fencing
errors from a member whose generation/epoch is older than the group's, that has left the group, or for a
partition it does not own. librdkafka clears its member id after eviction, so a zombie's commit may carry an
empty member id: it is attributed through `details.last_member_id`, else the client id and host of a departed
member. The member id a client reports is not trusted over its generation/epoch either: between its rejoin's
MEMBER_ID_REQUIRED answer and the JoinGroup that grants a new generation, librdkafka pairs the new member id with
the old generation, so a zombie's refused commit can name the live rejoined member (see `attribute`). A commit
nobody can attribute to a (former) member is not a zombie: an assign()-mode consumer's commit into a live group is
refused by the broker, and accepted once the group is Empty, without any zombie involved.

From `__consumer_offsets` alone: a committed offset that moves backwards right after its partition changed
owner (the old owner committing its stale position), and commits landing in a group that went Empty because
its members were removed (expired/fenced, not left) for a partition such a member owned. Any other backwards
move is an offset_regression. Both are point incidents: they resolve when the group next stabilises (zombie)
or when the partition's committed offset passes its earlier high-water mark again (regression).
"""

from __future__ import annotations

from rebalance_radar.transforms.detectors.detections import DetectionBook
from rebalance_radar.transforms.detectors.evidence import source_ref
from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.state import DepartedMember, GroupState, MemberState
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import DetectionKind, HeartbeatEventKind

ZOMBIE = DetectionKind.ZOMBIE_COMMIT
REGRESSION = DetectionKind.OFFSET_REGRESSION


def _commit_partitions(event: GroupEvent) -> list[str]:
    text = event.detail("partitions") or event.detail("failed_partitions") or ""
    out = [p.strip() for p in text.split(",") if p.strip()]
    if not out and event.detail("partition") is not None:
        out = [str(event.detail("partition"))]
    return out


def _known(state: GroupState, member_id: str | None) -> MemberState | DepartedMember | None:
    if not member_id:
        return None
    return state.members.get(member_id) or state.departed.get(member_id)


def _sent_generation(event: GroupEvent) -> int | None:
    """The generation (classic) or member epoch (KIP-848) the event says the client sent; negative values are
    the clients' "none" (librdkafka -1 after ILLEGAL_GENERATION, Java's NO_GENERATION), not an old generation."""
    sent = event.generation if event.generation is not None else event.member_epoch
    return sent if sent is not None and sent >= 0 else None


def _former_member(
    state: GroupState, event: GroupEvent, named: MemberState | DepartedMember
) -> MemberState | DepartedMember | None:
    """The former member an event belongs to although it names `named`: the event's generation/epoch is older
    than `named`'s, and `details.last_member_id` names another (former) member that was in that generation or has
    departed. Why: the member id a client reports can be newer than the generation it sent (librdkafka after
    MEMBER_ID_REQUIRED: the rejoin's id, the evicted member's generation), while the generation is what the
    coordinator judged. KIP-848 keeps the member id across a rejoin, so there the id names the right member
    and the epoch comparison in `check_telemetry_commit` does the rest; Java resets both to NO_GENERATION and an
    empty id, which `attribute` resolves through `last_member_id` or client id and host."""
    sent = _sent_generation(event)
    last_id = event.detail("last_member_id")
    if sent is None or not last_id or last_id == named.member_id:
        return None
    named_generation = named.generation
    if named_generation is None and isinstance(named, MemberState):
        named_generation = state.generation  # a live member is at least in the group's generation
    if named_generation is None or sent >= named_generation:
        return None
    former = _known(state, last_id)
    if former is None:
        return None
    if isinstance(former, DepartedMember) or former.generation == sent:
        return former
    return None


def attribute(state: GroupState, event: GroupEvent) -> MemberState | DepartedMember | None:
    """The (former) member a telemetry event is about: its id (unless its generation/epoch shows it was sent by
    the former member `last_member_id` names, see `_former_member`), its last id, else its client id and host."""
    named = _known(state, event.member_id)
    if named is not None:
        return _former_member(state, event, named) or named
    last = _known(state, event.detail("last_member_id"))
    if last is not None:
        return last
    if event.client_id:
        candidates = [
            d
            for d in state.departed.values()
            if d.client_id == event.client_id and (event.host is None or d.host in (None, event.host))
        ]
        if len(candidates) >= 1 and not any(
            m.client_id == event.client_id and (event.host is None or m.host in (None, event.host))
            for m in state.members.values()
        ):
            return max(candidates, key=lambda d: d.at_ms)
    return None


def _generation_of(state: GroupState, member_id: str) -> int | None:
    """The generation/epoch a (former) member was in: one zombie incident per member and generation, whichever
    source (telemetry or `__consumer_offsets`) shows it."""
    if member_id in state.departed:
        return state.departed[member_id].generation
    if member_id in state.members:
        return state.members[member_id].generation
    return state.generation


def check_telemetry_commit(
    state: GroupState, book: DetectionBook, event: GroupEvent, thresholds: DetectorThresholds
) -> None:
    """A commit or commit failure reported by a client: is it a zombie's?"""
    failed_fenced = event.error in thresholds.zombie_commit_errors
    who = attribute(state, event)
    if who is None:
        return
    sent_generation = event.generation if event.generation is not None else event.member_epoch
    reasons: list[str] = []
    if isinstance(who, DepartedMember):
        if who.how == "replaced" or event.event_time_ms < who.at_ms:
            return  # a static member's previous incarnation, or a commit from before it left
        if who.how == "left" and not failed_fenced:
            return  # a clean leaver's last commit may trail its LeaveGroup by a moment
        reasons.append(f"it was {who.how} from the group")
    else:
        stale = sent_generation is not None and who.generation is not None and sent_generation < who.generation
        # STALE_MEMBER_EPOCH from a live KIP-848 member is a commit racing its own epoch bump: the client retries
        if failed_fenced and stale and event.error != "STALE_MEMBER_EPOCH":
            reasons.append(f"it sent generation/epoch {sent_generation}, the group is at {who.generation}")
        timeout = who.session_timeout_ms or thresholds.default_session_timeout_ms
        silent = who.last_heartbeat_ms is not None and event.event_time_ms - who.last_heartbeat_ms > timeout
        if failed_fenced and silent and not reasons:
            reasons.append(
                f"it had been silent {round((event.event_time_ms - who.last_heartbeat_ms) / 1000)} s, past its "
                f"{round(timeout / 1000)} s session timeout, and the coordinator no longer knows it"
            )
        partitions = _commit_partitions(event)
        not_owned = [p for p in partitions if who.partitions and p not in who.partitions]
        # a cooperative member commits the partitions it is revoking right after the new assignment: only a
        # refused commit for a partition it no longer owns is a zombie's
        if not_owned and failed_fenced and state.protocol == "classic":
            reasons.append(f"it does not own {', '.join(not_owned[:5])}")
    if not reasons:
        return
    generation = who.generation
    if event.error:
        verb = f"failed with {event.error}"
    elif event.event == HeartbeatEventKind.COMMIT_FAILED:
        # a failure whose line names no error, e.g. the Java client refusing the commit itself ("Failing OffsetCommit
        # request since the consumer is not part of an active group", when its heartbeat learnt of the eviction
        # first): an attempt all the same, and not one that was sent
        verb = f"failed ({event.reason})" if event.reason else "failed"
    else:
        verb = "was sent"
    book.open(
        ZOMBIE,
        (who.member_id, generation),
        at_ms=event.event_time_ms,
        first_seen_ms=event.event_time_ms,
        summary=(
            f"member {who.member_id} of group {state.group_id} kept committing after it lost its membership: "
            f"a commit {verb} because {'; '.join(reasons)}"
        ),
        refs=[source_ref(event)],
        generation=generation,
        member_id=who.member_id,
    )


def check_offset_commit(
    state: GroupState, book: DetectionBook, event: GroupEvent, thresholds: DetectorThresholds
) -> None:
    """A committed offset from `__consumer_offsets`: backwards after an owner change, or into an emptied group."""
    key = f"{event.topic}-{event.partition}"
    if event.is_tombstone or event.committed_offset is None:
        state.offsets.pop(key, None)
        return
    now = event.event_time_ms
    previous = state.offsets.get(key)
    if previous is not None and previous[0] > event.committed_offset:
        state.offsets[key] = [previous[0], now]  # keep the high-water mark: a later catch-up resolves
    else:
        state.offsets[key] = [event.committed_offset, now]
        for row in book.open_of_kind(REGRESSION):
            if row["topic"] == event.topic and row["partition"] == event.partition:
                book.resolve(row["detection_id"], at_ms=now)
    if (
        state.state == "Empty"
        and state.empty_by_removal_ms is not None
        and now - state.empty_by_removal_ms <= thresholds.zombie_empty_group_ms
        and key in state.removed_partitions
    ):
        owner = state.removed_partitions[key]
        book.open(
            ZOMBIE,
            (owner, _generation_of(state, owner)),
            at_ms=now,
            first_seen_ms=now,
            summary=(
                f"offset {event.committed_offset} of {key} was committed into group {state.group_id} after the "
                f"group went Empty because its members were removed; {owner} owned that partition"
            ),
            refs=[source_ref(event)],
            generation=_generation_of(state, owner),
            member_id=owner,
            topic=event.topic,
            partition=event.partition,
        )
        return
    if previous is None or previous[0] - event.committed_offset < thresholds.offset_regression_min_delta:
        return
    changed = state.owner_changed.get(key)
    if changed is not None and now - changed[0] <= thresholds.zombie_after_owner_change_ms and changed[1]:
        book.open(
            ZOMBIE,
            (changed[1], _generation_of(state, changed[1])),
            at_ms=now,
            first_seen_ms=changed[0],
            summary=(
                f"the committed offset of {key} in group {state.group_id} moved back from {previous[0]} to "
                f"{event.committed_offset} {round((now - changed[0]) / 1000)} s after the partition left "
                f"{changed[1]}: its old owner committed a stale position"
            ),
            refs=[source_ref(event)],
            generation=_generation_of(state, changed[1]),
            member_id=changed[1],
            topic=event.topic,
            partition=event.partition,
        )
        return
    book.open(
        REGRESSION,
        (key, previous[0]),
        at_ms=now,
        first_seen_ms=previous[1],
        summary=(
            f"the committed offset of {key} in group {state.group_id} moved back from {previous[0]} to "
            f"{event.committed_offset}; records will be processed again"
        ),
        refs=[source_ref(event)],
        generation=state.generation,
        topic=event.topic,
        partition=event.partition,
    )
