"""The incident tables the on-call queries are tested against: one place to build them.

A dump file holding the incidents of seed 001 in three classic groups, made of real coordinator bytes (the codec's
writer) and real-format broker lines and agent events, replayed by the real `radar replay` into real Delta tables:
- `orders`: member B stalls past its session, the 4.x coordinator removes it on heartbeat expiration, generation 8
  goes to A alone, and B wakes and commits with generation 7 (a zombie, refused with ILLEGAL_GENERATION);
- `billing`: member C expired three hours before the dump ends (outside "the last hour");
- `payments`: membership flapping between one and two members, generation after generation (the busiest group).
The same rows fed to the pure tracker (`silver_rows.run`) are the oracle for what gold must hold.

To run the queries over other tables (the demo's, say), build an `IncidentTables` for them with their own oracle.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebalance_radar.pipelines.cli import main
from tests.transforms.detectors.silver_rows import BASE_MS, OFFSETS_TOPIC, TELEMETRY_TOPIC, Member, Outcome, Silver, run

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf" / "local.yml"
LATENESS_MS = 2000  # conf/local.yml detect.lateness_ms: the end-of-dump tick is this far after the newest record

ORDERS, BILLING, PAYMENTS = "orders", "billing", "payments"
A = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a", host="10.0.0.1")
B = Member("rdkafka-orders-2-bbb", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
ALL_TO_A = Member(A.member_id, [("orders", p) for p in range(4)], client_id="worker-a", host="10.0.0.1")
C = Member("consumer-billing-1-ccc", [("invoices", 0)], client_id="billing-c", host="10.0.1.3", topics=("invoices",))
D = Member("consumer-billing-2-ddd", [("invoices", 1)], client_id="billing-d", host="10.0.1.4", topics=("invoices",))
ALL_TO_D = Member(
    D.member_id, [("invoices", 0), ("invoices", 1)], client_id="billing-d", host="10.0.1.4", topics=("invoices",)
)
P1 = Member(
    "consumer-payments-1-p1",
    [("payments", 0), ("payments", 1)],
    client_id="pay-1",
    host="10.0.2.1",
    topics=("payments",),
)
P1_HALF = Member(P1.member_id, [("payments", 0)], client_id="pay-1", host="10.0.2.1", topics=("payments",))
P2 = Member("consumer-payments-2-p2", [("payments", 1)], client_id="pay-2", host="10.0.2.2", topics=("payments",))
PAYMENTS_GENERATIONS = 7  # generations 1..7, alternating one and two members


@dataclass
class DumpedSilver(Silver):
    """`Silver` that also keeps every record it makes as a dump line, so the same incident can be replayed."""

    records: list[dict[str, Any]] = field(default_factory=list)
    dump_offsets: dict[str, int] = field(default_factory=dict)

    def _dump(self, topic: str, partition: int, key: bytes | None, value: bytes | None, t_ms: int) -> None:
        offset = self.dump_offsets.get(topic, 0)
        self.dump_offsets[topic] = offset + 1
        encoded = {"key": key, "value": value}
        self.records.append(
            {
                "topic": topic,
                "partition": partition,
                "offset": offset,
                "timestamp": t_ms,
                **{k: None if v is None else base64.b64encode(v).decode("ascii") for k, v in encoded.items()},
                "codec": "base64",
            }
        )

    def _decoded(self, key: bytes, value: bytes | None, t_ms: int) -> dict[str, Any]:
        self._dump(OFFSETS_TOPIC, 12, key, value, t_ms)
        return super()._decoded(key, value, t_ms)

    def _telemetry(self, value: bytes, t_ms: int) -> list[dict[str, Any]]:
        self._dump(TELEMETRY_TOPIC, 0, None, value, t_ms)
        return super()._telemetry(value, t_ms)

    def write(self, path: Path) -> Path:
        """The dump file, records in log order per topic."""
        path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in self.records))
        return path


def _expiry(s: DumpedSilver, group: str, generation: int, stays: Member, goes: Member, moved: Member, t: int) -> int:
    """`goes` stops heartbeating at t+19 s, the coordinator removes it at t+31 s, generation+1 has `moved` alone at
    t+32.5 s. Returns the time of generation+1."""
    s.generation(group, generation, [stays, goes], t)
    for beat in range(t + 1000, t + 40_000, 3000):
        s.agent("heartbeat", group, beat, member_id=stays.member_id, generation=generation, client_id=stays.client_id)
        if beat < t + 20_000:
            s.agent("heartbeat", group, beat, member_id=goes.member_id, generation=generation, client_id=goes.client_id)
    expired = t + 31_000
    s.broker(f"Member {goes.member_id} in group {group} has failed, removing it from the group.", expired)
    s.broker(
        f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {generation} "
        f"(reason: removing member {goes.member_id} on heartbeat expiration).",
        expired,
    )
    s.generation(group, generation + 1, [moved], expired + 1500)
    return expired + 1500


def incident_scenario() -> DumpedSilver:
    """The three groups' records, in event-time order per topic (see the module docstring)."""
    s = DumpedSilver()
    t = BASE_MS
    _expiry(s, BILLING, 3, D, C, ALL_TO_D, t - 3 * 3600 * 1000)
    for n in range(1, PAYMENTS_GENERATIONS + 1):
        s.generation(PAYMENTS, n, [P1] if n % 2 else [P1_HALF, P2], t + n * 5000)
    after = _expiry(s, ORDERS, 7, A, B, ALL_TO_A, t)
    s.commit(ORDERS, "orders", 0, 120, after + 1000)
    s.agent(
        "commit_failed",
        ORDERS,
        after + 8000,
        member_id=B.member_id,
        generation=7,
        client_id=B.client_id,
        host=B.host,
        error="ILLEGAL_GENERATION",
        reason="Broker: Specified group generation id is not valid",
        details={"trigger": "sync", "partitions": "orders-2,orders-3", "offsets": "120,98"},
    )
    s.agent("heartbeat", ORDERS, after + 20_000, member_id=A.member_id, generation=8, client_id=A.client_id)
    return s


@dataclass(frozen=True)
class IncidentTables:
    """Where the replayed tables are, and what the tracker alone says gold must hold (per group)."""

    data_dir: Path
    conf: Path
    oracle: dict[str, Outcome]
    newest_ms: int

    @property
    def monitor_clock(self) -> datetime:
        """The end-of-dump clock tick `radar replay` writes (newest record + lateness), naive UTC as Spark returns."""
        return datetime.fromtimestamp((self.newest_ms + LATENESS_MS) / 1000, tz=UTC).replace(tzinfo=None)


def replay_incidents(folder: Path) -> IncidentTables:
    """Write the dump, replay it with `radar replay` into `folder/data`, and compute the oracle."""
    s = incident_scenario()
    dump = s.write(folder / "incidents.jsonl")
    data_dir = folder / "data"
    assert main(["replay", "--input", str(dump), "--data-dir", str(data_dir), "--conf", str(CONF)]) == 0
    newest = max(r["timestamp"] for r in s.records)
    oracle = {group: run(group, s.rows, newest) for group in (ORDERS, BILLING, PAYMENTS)}
    return IncidentTables(data_dir, CONF, oracle, newest)
