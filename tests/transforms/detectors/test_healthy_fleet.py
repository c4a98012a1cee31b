"""False positives: a healthy fleet over three simulated hours gives zero detections.

Four groups, real bytes and real-format lines: a classic group with heartbeats, steady commits, a scale-out, a
dynamic rolling restart, the skip-by-one trap and a clean shutdown; a static-membership group restarted member by
member (no rebalance); a KIP-848 group scaling out and in; a Kafka Streams group with a cooperative followup.
"""

from __future__ import annotations

from collections.abc import Iterator

from tests.transforms.detectors.silver_rows import BASE_MS, Member, Silver, run

HOUR = 3_600_000
END = BASE_MS + 3 * HOUR
SESSION = 45_000
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAABQ"


class ClassicGroup:
    """A classic group as the coordinator and its clients would write it."""

    def __init__(self, silver: Silver, group: str, partitions: int) -> None:
        self.s = silver
        self.group = group
        self.partitions = partitions
        self.generation = 1
        self.members: list[Member] = []
        self.offsets = dict.fromkeys(range(partitions), 0)
        self.serial = 0

    def new_member(self, host: str, instance_id: str | None = None) -> Member:
        self.serial += 1
        return Member(
            f"consumer-{self.group}-1-{self.serial:04d}",
            client_id=f"consumer-{self.group}-1",
            host=host,
            instance_id=instance_id,
            session_timeout_ms=SESSION,
            rebalance_timeout_ms=300_000,
            topics=(self.group,),
        )

    def assigned(self, members: list[Member]) -> list[Member]:
        out = []
        for i, m in enumerate(sorted(members, key=lambda x: x.member_id)):
            mine = [(self.group, p) for p in range(self.partitions) if p % len(members) == i]
            out.append(Member(m.member_id, mine, m.instance_id, m.client_id, m.host, SESSION, 300_000, m.topics))
        return out

    def persist(self, t: int, skip: int = 1) -> None:
        self.generation += skip
        self.members = self.assigned(self.members)
        self.s.generation(
            self.group, self.generation, self.members, t, leader=self.members[0].member_id if self.members else None
        )

    def prepare(self, reason: str, t: int) -> None:
        self.s.broker(
            f"Preparing to rebalance group {self.group} in state PreparingRebalance with old generation "
            f"{self.generation} (reason: {reason}).",
            t,
        )

    def join(self, member: Member, t: int) -> None:
        self.prepare(
            f"Adding new member {member.member_id} with group instance id None; client reason: need to "
            f"re-join with the given member-id: {member.member_id}",
            t,
        )
        self.members = [*self.members, member]
        self.persist(t + 3000)
        self.s.broker(
            f"Stabilized group {self.group} generation {self.generation} with {len(self.members)} members.", t + 3000
        )

    def leave(self, member: Member, t: int) -> None:
        self.s.broker(
            f"[Group {self.group}] Member {member.member_id} has left group through explicit `LeaveGroup` "
            "request; client reason: the consumer is being closed",
            t,
        )
        self.prepare(f"explicit `LeaveGroup` request for ({member.member_id}) members.", t)
        self.members = [m for m in self.members if m.member_id != member.member_id]
        self.persist(t + 2000)

    def tick(self, t: int) -> None:
        """Heartbeats of every member (agent, every 5 s) and, once a minute, the owners' commits."""
        for m in self.members:
            self.s.agent(
                "heartbeat",
                self.group,
                t + 50,
                member_id=m.member_id,
                generation=self.generation,
                client_id=m.client_id,
                host=m.host,
            )
        if (t - BASE_MS) % 60_000 == 0:
            for m in self.members:
                for _, p in m.partitions:
                    self.offsets[p] += 500
                    self.s.commit(self.group, self.group, p, self.offsets[p], t + 100)


def every(start: int, stop: int, step: int) -> Iterator[int]:
    return iter(range(start, stop, step))


def build_fleet() -> tuple[Silver, list[str]]:
    s = Silver()
    # --- classic dynamic group ---------------------------------------------------------------------------------
    orders = ClassicGroup(s, "orders", 6)
    orders.members = [orders.new_member(f"10.0.0.{i}") for i in range(1, 4)]
    orders.persist(BASE_MS)
    # --- classic static group ----------------------------------------------------------------------------------
    billing = ClassicGroup(s, "billing", 4)
    billing.members = [billing.new_member(f"10.1.0.{i}", instance_id=f"billing-{i}") for i in range(1, 4)]
    billing.persist(BASE_MS)
    # --- Streams (classic protocol "stream") -------------------------------------------------------------------
    streams = ClassicGroup(s, "app", 4)
    streams.members = [streams.new_member("10.2.0.1")]
    streams.persist(BASE_MS)
    planned: dict[int, list] = {}

    def at(t: int, action: object) -> None:
        planned.setdefault(t, []).append(action)

    # orders: scale-out at 30 min, the skip-by-one trap at 50 min, a rolling restart at 60 min, scale-in at 2 h,
    # clean shutdown at 2 h 50
    at(BASE_MS + 30 * 60_000, lambda t: orders.join(orders.new_member("10.0.0.4"), t))

    def trap(t: int) -> None:
        first, second = orders.new_member("10.0.0.5"), orders.new_member("10.0.0.6")
        orders.prepare(
            f"Adding new member {first.member_id} with group instance id None; client reason: need to "
            "re-join with the given member-id",
            t,
        )
        orders.prepare(
            f"Member {second.member_id} joining group during CompletingRebalance; client reason: need to "
            "re-join with the given member-id",
            t + 800,
        )
        orders.members = [*orders.members, first, second]
        orders.persist(t + 3000, skip=2)  # generation N+1 stabilised in memory only

    at(BASE_MS + 50 * 60_000, trap)
    for i in range(5):

        def restart(t: int, i: int = i) -> None:
            old = sorted(orders.members, key=lambda m: m.member_id)[0]
            orders.leave(old, t)
            at_join = t + 20_000
            planned.setdefault(at_join - at_join % 5000, []).append(
                lambda tt: orders.join(orders.new_member(f"10.0.1.{i}"), tt)
            )

        at(BASE_MS + 60 * 60_000 + i * 180_000, restart)
    at(BASE_MS + 120 * 60_000, lambda t: orders.leave(orders.members[-1], t))

    def shutdown(t: int) -> None:
        for k, m in enumerate(list(orders.members)):
            orders.s.broker(
                f"[Group orders] Member {m.member_id} has left group through explicit `LeaveGroup` "
                "request; client reason: the consumer is being closed",
                t + k * 10,
            )
        orders.prepare(
            "explicit `LeaveGroup` request for (" + ",".join(m.member_id for m in orders.members) + ") members.", t
        )
        orders.members = []
        orders.persist(t + 1000)
        s.broker(f"Group orders with generation {orders.generation} is now empty.", t + 1000)

    at(BASE_MS + 170 * 60_000, shutdown)

    # billing: static rolling restart at 40 min, one member every 2 minutes, back within 12 s
    for i in range(3):

        def bounce(t: int, instance: str = f"billing-{i + 1}") -> None:
            (old,) = [m for m in billing.members if m.instance_id == instance]
            new = billing.new_member(old.host, instance_id=old.instance_id)
            billing.members = [m for m in billing.members if m.member_id != old.member_id]
            rejoin = t + 12_000
            s.broker(
                f"Static member with groupInstanceId={old.instance_id} and unknown member id joins group billing "
                f"in Stable state. Replacing previously mapped member {old.member_id} with this "
                "groupInstanceId.",
                rejoin,
            )
            s.broker(
                "Static member which joins during Stable stage and doesn't affect the selected protocol will "
                "not trigger a rebalance.",
                rejoin,
            )
            billing.members = [*billing.members, new]
            billing.members = billing.assigned(billing.members)
            s.generation(
                "billing", billing.generation, billing.members, rejoin + 5, leader=billing.members[0].member_id
            )

        at(BASE_MS + 40 * 60_000 + i * 120_000, bounce)

    # streams: a second node at 20 min, a cooperative followup right after
    def streams_scale_out(t: int) -> None:
        new = streams.new_member("10.2.0.2")
        streams.join(new, t)
        s.client(
            new.client_id,
            "app",
            "Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner.",
            t + 3100,
        )
        streams.prepare(
            f"Updating metadata for member {streams.members[0].member_id} during Stable; client reason: "
            "triggered followup rebalance scheduled for 0",
            t + 3500,
        )
        streams.persist(t + 4500)

    at(BASE_MS + 20 * 60_000, streams_scale_out)

    for t in every(BASE_MS, END, 5000):
        for action in planned.pop(t, []):
            action(t)
        for group in (orders, billing, streams):
            if group.members:
                group.tick(t)
    kip848(s)
    return s, ["orders", "billing", "app", "events"]


def kip848(s: Silver) -> None:
    """A KIP-848 group: three members, a fourth joins at 40 min and reconciles in 4 s, one leaves at 100 min."""
    g = "events"
    epoch = 5

    def member_records(member: str, t: int, e: int, partitions: list[int], state: int = 0) -> None:
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": g, "memberId": member},
            {
                "memberEpoch": e,
                "previousMemberEpoch": e - 1,
                "state": state,
                "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": partitions}],
            },
            t,
        )

    members = ["ev-a", "ev-b", "ev-c"]
    s.record("ConsumerGroupMetadata", {"groupId": g}, {"epoch": epoch, "metadataHash": 1}, BASE_MS)
    for i, m in enumerate(members):
        s.record(
            "ConsumerGroupMemberMetadata",
            {"groupId": g, "memberId": m},
            {"clientId": m, "clientHost": f"/10.3.0.{i}", "rebalanceTimeoutMs": 60_000},
            BASE_MS,
        )
        member_records(m, BASE_MS, epoch, [i * 2, i * 2 + 1])
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": g}, {"assignmentEpoch": epoch}, BASE_MS)
    t = BASE_MS + 40 * 60_000
    s.broker(f"[GroupId {g}] Member ev-d joins the consumer group using the consumer protocol.", t)
    s.record(
        "ConsumerGroupMemberMetadata",
        {"groupId": g, "memberId": "ev-d"},
        {"clientId": "ev-d", "clientHost": "/10.3.0.9", "rebalanceTimeoutMs": 60_000},
        t,
    )
    epoch += 1
    s.record("ConsumerGroupMetadata", {"groupId": g}, {"epoch": epoch, "metadataHash": 1}, t)
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": g}, {"assignmentEpoch": epoch}, t)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": g, "memberId": "ev-c"},
        {
            "memberEpoch": epoch - 1,
            "previousMemberEpoch": epoch - 1,
            "state": 1,
            "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": [4]}],
            "partitionsPendingRevocation": [{"topicId": TOPIC_ID, "partitions": [5]}],
        },
        t + 1000,
    )
    for i, m in enumerate(members):
        member_records(m, t + 4000, epoch, [i * 2] if m != "ev-c" else [4])
    member_records("ev-d", t + 4000, epoch, [1, 3, 5])
    t = BASE_MS + 100 * 60_000
    s.broker(f"[GroupId {g}] Member ev-b left the consumer group.", t)
    s.record("ConsumerGroupCurrentMemberAssignment", {"groupId": g, "memberId": "ev-b"}, None, t)
    s.record("ConsumerGroupMemberMetadata", {"groupId": g, "memberId": "ev-b"}, None, t)
    epoch += 1
    s.record("ConsumerGroupMetadata", {"groupId": g}, {"epoch": epoch, "metadataHash": 1}, t)
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": g}, {"assignmentEpoch": epoch}, t)
    for m in ("ev-a", "ev-c", "ev-d"):
        member_records(m, t + 3000, epoch, [0, 1] if m == "ev-a" else [2, 3])
    for beat in every(BASE_MS, END, 5000):
        for m in (
            ("ev-a", "ev-c")
            + (("ev-d",) if beat > BASE_MS + 40 * 60_000 else ())
            + (("ev-b",) if beat < BASE_MS + 100 * 60_000 else ())
        ):
            s.agent("heartbeat", g, beat + 70, member_id=m, member_epoch=epoch, client_id=m)


def test_healthy_fleet_for_three_hours_gives_zero_detections() -> None:
    silver, groups = build_fleet()
    assert len(silver.rows) > 8000
    rebalances = {}
    for group in groups:
        out = run(group, silver.rows, END)
        assert out.detections == {}, (group, [(d["kind"], d["summary"]) for d in out.detections.values()])
        rebalances[group] = out.completed()
        assert out.health is not None and out.health["open_detections"] == 0
    orders = rebalances["orders"]
    assert [r["cause"] for r in orders] == (
        ["member_joined", "member_joined"] + ["member_left", "member_joined"] * 5 + ["member_left", "member_left"]
    )
    assert orders[1]["generation"] - orders[1]["from_generation"] == 2  # the never-persisted generation
    assert orders[-1]["members_after"] == 0
    assert rebalances["billing"] == []  # the static rolling restart never rebalanced
    assert [r["cause"] for r in rebalances["app"]] == ["member_joined", "enforced"]
    events = rebalances["events"]
    assert [(r["cause"], r["joined"], r["left"]) for r in events] == [
        ("member_joined", ["ev-d"], []),
        ("member_left", [], ["ev-b"]),
    ]
