"""Who a telemetry event is about: a live member, or a former one, when the ids clients report cannot be taken at
their word (librdkafka clears its member id after eviction; a rejoin pairs a new id with the old generation)."""

from __future__ import annotations

from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.state import DepartedMember, GroupState, MemberState


def known(state: GroupState, member_id: str | None) -> MemberState | DepartedMember | None:
    if not member_id:
        return None
    return state.members.get(member_id) or state.departed.get(member_id)


def sent_generation(event: GroupEvent) -> int | None:
    """The generation (classic) or member epoch (KIP-848) the event says the client sent; negative values are
    the clients' "none" (librdkafka -1 after ILLEGAL_GENERATION, Java's NO_GENERATION), not an old generation."""
    sent = event.generation if event.generation is not None else event.member_epoch
    return sent if sent is not None and sent >= 0 else None


def former_member(
    state: GroupState, event: GroupEvent, named: MemberState | DepartedMember
) -> MemberState | DepartedMember | None:
    """The former member an event belongs to although it names `named`: the event's generation/epoch is older
    than `named`'s, and `details.last_member_id` names another (former) member that was in that generation or has
    departed. Why: the member id a client reports can be newer than the generation it sent (librdkafka after
    MEMBER_ID_REQUIRED: the rejoin's id, the evicted member's generation), while the generation is what the
    coordinator judged. KIP-848 keeps the member id across a rejoin, so there the id names the right member
    and the epoch comparison in the zombie_commit rule does the rest; Java resets both to NO_GENERATION and an
    empty id, which `attribute` resolves through `last_member_id` or client id and host."""
    sent = sent_generation(event)
    last_id = event.detail("last_member_id")
    if sent is None or not last_id or last_id == named.member_id:
        return None
    named_generation = named.generation
    if named_generation is None and isinstance(named, MemberState):
        named_generation = state.generation  # a live member is at least in the group's generation
    if named_generation is None or sent >= named_generation:
        return None
    former = known(state, last_id)
    if former is None:
        return None
    if isinstance(former, DepartedMember) or former.generation == sent:
        return former
    return None


def attribute(state: GroupState, event: GroupEvent) -> MemberState | DepartedMember | None:
    """The (former) member a telemetry event is about: its id (unless its generation/epoch shows it was sent by
    the former member `last_member_id` names, see `former_member`), its last id, else its client id and host."""
    named = known(state, event.member_id)
    if named is not None:
        return former_member(state, event, named) or named
    last = known(state, event.detail("last_member_id"))
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


def generation_of(state: GroupState, member_id: str) -> int | None:
    """The generation/epoch a (former) member was in: one zombie incident per member and generation, whichever
    source (telemetry or `__consumer_offsets`) shows it."""
    if member_id in state.departed:
        return state.departed[member_id].generation
    if member_id in state.members:
        return state.members[member_id].generation
    return state.generation
