"""zombie_commit and offset_regression: commits from members that are no longer who they think they are, and
committed offsets that move backwards.

From telemetry (agent, protocol frames, client logs): a commit or a commit failure with one of the fencing
errors from a member whose generation/epoch is older than the group's, that has left the group, or for a
partition it does not own (`membership.attribute` finds the member when the id a client reports cannot be taken
at its word). A commit nobody can attribute to a (former) member is not a zombie: an assign()-mode consumer's
commit into a live group is refused by the broker, and accepted once the group is Empty, without any zombie.

From `__consumer_offsets` alone: a committed offset that moves backwards right after its partition changed
owner (the old owner committing its stale position), and commits landing in a group that went Empty because
its members were removed (expired/fenced, not left) for a partition such a member owned. Any other backwards
move is an offset_regression.
"""

from __future__ import annotations

from rebalance_radar.transforms.detectors.evidence import source_ref
from rebalance_radar.transforms.detectors.facts import ClientCommitted, OffsetCommitted
from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.membership import attribute, generation_of
from rebalance_radar.transforms.detectors.rules.heartbeats import session_timeout_words
from rebalance_radar.transforms.detectors.rules.rule import Rule, RuleContext, registered
from rebalance_radar.transforms.detectors.settings import poll_advice, session_timeout_of
from rebalance_radar.transforms.detectors.state import DepartedMember, DepartureKind, RegressedPartition
from rebalance_radar.transforms.schemas import DetectionKind, HeartbeatEventKind, Severity


def _commit_partitions(event: GroupEvent) -> list[str]:
    text = event.detail("partitions") or event.detail("failed_partitions") or ""
    out = [p.strip() for p in text.split(",") if p.strip()]
    if not out and event.detail("partition") is not None:
        out = [str(event.detail("partition"))]
    return out


def _moved_back(fact: OffsetCommitted, ctx: RuleContext) -> bool:
    """The commit went back from the partition's high-water mark by at least `offset_regression_min_delta`."""
    committed = fact.event.committed_offset
    return (
        fact.previous is not None
        and committed is not None
        and fact.previous.offset - committed >= ctx.thresholds.offset_regression_min_delta
    )


@registered
class ZombieCommit(Rule):
    """A member kept committing after it lost its membership: one incident per client (its instance id, else client
    id and host), each later zombie of the same client, under whatever member id, an occurrence of it."""

    kind = DetectionKind.ZOMBIE_COMMIT
    severity = Severity.CRITICAL
    member_subject = True
    thresholds = (
        "zombie_commit_errors",
        "default_session_timeout_ms",
        "zombie_after_owner_change_ms",
        "zombie_empty_group_ms",
        "offset_regression_min_delta",
        "incident_quiet_ms",
        "incident_reopen_ms",
    )
    reacts_to = (ClientCommitted, OffsetCommitted)
    resolves = "after incident_quiet_ms without another commit from the zombie"
    remedy = (
        "the member went on processing after the group moved its partitions on, so records may be processed twice: "
        "its poll loop took longer than max.poll.interval.ms (lower max.poll.records or speed up the processing, or "
        "raise max.poll.interval.ms), or its heartbeats stopped past session.timeout.ms (see heartbeat_expiration)."
    )
    quiet_resolved = True

    def react(self, fact: ClientCommitted | OffsetCommitted, ctx: RuleContext) -> None:
        if isinstance(fact, ClientCommitted):
            self._client_commit(fact.event, ctx)
        elif self.into_emptied_group(fact, ctx):
            self._into_emptied_group(fact, ctx)
        elif _moved_back(fact, ctx) and self.stale_owner(fact, ctx) is not None:
            self._stale_owner(fact, ctx)

    @classmethod
    def explains(cls, fact: OffsetCommitted, ctx: RuleContext) -> bool:
        """This commit is a zombie's (so it is not an offset_regression of its own)."""
        return cls.into_emptied_group(fact, ctx) or (_moved_back(fact, ctx) and cls.stale_owner(fact, ctx) is not None)

    @staticmethod
    def into_emptied_group(fact: OffsetCommitted, ctx: RuleContext) -> bool:
        st = ctx.state
        return (
            st.state == "Empty"
            and st.empty_by_removal_ms is not None
            and fact.event.event_time_ms - st.empty_by_removal_ms <= ctx.thresholds.zombie_empty_group_ms
            and fact.partition_key in st.removed_partitions
        )

    @staticmethod
    def stale_owner(fact: OffsetCommitted, ctx: RuleContext) -> str | None:
        """The partition's previous owner, if it changed owner just before this backwards commit."""
        changed = ctx.state.owner_changed.get(fact.partition_key)
        if changed is None or not changed.previous_owner:
            return None
        if fact.event.event_time_ms - changed.at_ms > ctx.thresholds.zombie_after_owner_change_ms:
            return None
        return changed.previous_owner

    def _into_emptied_group(self, fact: OffsetCommitted, ctx: RuleContext) -> None:
        st, event, key = ctx.state, fact.event, fact.partition_key
        owner = st.removed_partitions[key]
        self.open(
            ctx,
            (owner, generation_of(st, owner)),
            at_ms=event.event_time_ms,
            first_seen_ms=event.event_time_ms,
            summary=(
                f"offset {event.committed_offset} of {key} was committed into group {st.group_id} after the "
                f"group went Empty because its members were removed; {owner} owned that partition"
            ),
            refs=[source_ref(event)],
            generation=generation_of(st, owner),
            member_id=owner,
            topic=event.topic,
            partition=event.partition,
        )

    def _stale_owner(self, fact: OffsetCommitted, ctx: RuleContext) -> None:
        st, event, key = ctx.state, fact.event, fact.partition_key
        changed = st.owner_changed[key]
        owner = changed.previous_owner
        now = event.event_time_ms
        previous = fact.previous.offset if fact.previous is not None else None
        self.open(
            ctx,
            (owner, generation_of(st, owner)),
            at_ms=now,
            first_seen_ms=changed.at_ms,
            summary=(
                f"the committed offset of {key} in group {st.group_id} moved back from {previous} to "
                f"{event.committed_offset} {round((now - changed.at_ms) / 1000)} s after the partition left "
                f"{owner}: its old owner committed a stale position"
            ),
            refs=[source_ref(event)],
            generation=generation_of(st, owner),
            member_id=owner,
            topic=event.topic,
            partition=event.partition,
        )

    def _client_commit(self, event: GroupEvent, ctx: RuleContext) -> None:
        """A commit or commit failure reported by a client: is it a zombie's?"""
        st, th = ctx.state, ctx.thresholds
        failed_fenced = event.error in th.zombie_commit_errors
        who = attribute(st, event)
        if who is None:
            return
        sent_generation = event.generation if event.generation is not None else event.member_epoch
        reasons: list[str] = []
        if isinstance(who, DepartedMember):
            if who.how == DepartureKind.REPLACED or event.event_time_ms < who.at_ms:
                return  # a static member's previous incarnation, or a commit from before it left
            if who.how == DepartureKind.LEFT and not failed_fenced:
                return  # a clean leaver's last commit may trail its LeaveGroup by a moment
            reasons.append(f"it was {who.how} from the group")
        else:
            stale = sent_generation is not None and who.generation is not None and sent_generation < who.generation
            # STALE_MEMBER_EPOCH from a live KIP-848 member is a commit racing its own epoch bump: the client retries
            if failed_fenced and stale and event.error != "STALE_MEMBER_EPOCH":
                reasons.append(f"it sent generation/epoch {sent_generation}, the group is at {who.generation}")
            known = session_timeout_of(st, who)
            timeout = known.ms if known else th.default_session_timeout_ms
            silent = who.last_heartbeat_ms is not None and event.event_time_ms - who.last_heartbeat_ms > timeout
            if failed_fenced and silent and not reasons and who.last_heartbeat_ms is not None:
                reasons.append(
                    f"it had been silent {round((event.event_time_ms - who.last_heartbeat_ms) / 1000)} s, past "
                    f"{session_timeout_words(known, th)}, and the coordinator no longer knows it"
                )
            partitions = _commit_partitions(event)
            not_owned = [p for p in partitions if who.partitions and p not in who.partitions]
            # a cooperative member commits the partitions it is revoking right after the new assignment: only a
            # refused commit for a partition it no longer owns is a zombie's
            if not_owned and failed_fenced and st.protocol == "classic":
                reasons.append(f"it does not own {', '.join(not_owned[:5])}")
        if not reasons:
            return
        if event.error:
            verb = f"failed with {event.error}"
        elif event.event == HeartbeatEventKind.COMMIT_FAILED:
            # a failure whose line names no error, e.g. the Java client refusing the commit itself ("Failing
            # OffsetCommit request since the consumer is not part of an active group", when its heartbeat learnt of
            # the eviction first): an attempt all the same, and not one that was sent
            verb = f"failed ({event.reason})" if event.reason else "failed"
        else:
            verb = "was sent"
        self.open(
            ctx,
            (who.member_id, who.generation),
            at_ms=event.event_time_ms,
            first_seen_ms=event.event_time_ms,
            summary=(
                f"member {who.member_id} of group {st.group_id} kept committing after it lost its membership: "
                f"a commit {verb} because {'; '.join(reasons)}"
            ),
            refs=[source_ref(event)],
            generation=who.generation,
            member_id=who.member_id,
            incident_of=st.identity_of(who.member_id),
            advice=poll_advice(st, who),
        )


@registered
class OffsetRegression(Rule):
    """Committed offsets moved backwards, and no zombie explains it: records will be processed again. One incident
    per group, however many partitions went back (a reset of a group's offsets moves every partition)."""

    kind = DetectionKind.OFFSET_REGRESSION
    severity = Severity.WARNING
    thresholds = ("offset_regression_min_delta", "incident_quiet_ms")
    reacts_to = (OffsetCommitted,)
    resolves = (
        "when every partition's committed offset passed its earlier high-water mark again (or after "
        "incident_quiet_ms without another backwards commit)"
    )
    remedy = (
        "records from the lowest offsets will be processed again: find who moved them back (an offsets reset with "
        "kafka-consumer-groups.sh --reset-offsets, a consumer that seeks back and commits, auto.offset.reset after "
        "the offsets expired); the evidence names the commits."
    )
    quiet_resolved = True

    def react(self, fact: OffsetCommitted, ctx: RuleContext) -> None:
        st, event, key = ctx.state, fact.event, fact.partition_key
        committed = event.committed_offset
        if committed is None:
            return
        if fact.moved_back_by() == 0:
            if st.regressed.pop(key, None) is not None and not st.regressed and st.regression_id in st.detections:
                row = st.detections[st.regression_id]
                ctx.book.resolve(row.detection_id, at_ms=event.event_time_ms, summary=f"{row.summary}; caught up")
                st.regression_id = None
            return
        earlier = st.regressed.get(key)
        if earlier is not None:  # still below its high-water mark: the same regression, maybe lower
            earlier.lowest = min(earlier.lowest, committed)
        elif _moved_back(fact, ctx) and not ZombieCommit.explains(fact, ctx) and fact.previous is not None:
            st.regressed[key] = RegressedPartition(fact.previous.offset, committed, event.event_time_ms)
        else:
            return
        summary = self._summary(ctx)
        if st.regression_id is not None and st.regression_id in st.detections:
            ctx.book.update(st.regression_id, at_ms=event.event_time_ms, summary=summary, refs=[source_ref(event)])
            return
        first_key, first = min(st.regressed.items(), key=lambda item: (item[1].at_ms, item[0]))
        st.regression_id = self.open(
            ctx,
            (first_key, first.high_water),
            at_ms=event.event_time_ms,
            first_seen_ms=fact.previous.at_ms if fact.previous is not None else event.event_time_ms,
            summary=summary,
            refs=[source_ref(event)],
            generation=st.generation,
            topic=event.topic,  # the first partition's; the incident is the group's (its summary names each)
        )

    @staticmethod
    def _summary(ctx: RuleContext) -> str:
        regressed = sorted(ctx.state.regressed.items(), key=lambda item: (item[1].at_ms, item[0]))
        shown = ", ".join(f"{key} from {r.high_water} to {r.lowest}" for key, r in regressed[:3])
        more = f" and {len(regressed) - 3} more" if len(regressed) > 3 else ""
        what = "offset" if len(regressed) == 1 else f"offsets of {len(regressed)} partitions"
        return (
            f"the committed {what} of group {ctx.state.group_id} moved back ({shown}{more}); records will be "
            "processed again"
        )

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        super().at_deadline(ctx, now_ms)
        st = ctx.state
        if st.regression_id is not None and st.regression_id not in st.detections:
            st.regression_id = None
            st.regressed = {}
