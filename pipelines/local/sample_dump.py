"""The sample dump shipped in `samples/`: every coordinator record type, tombstones, a few bad records and some
telemetry lines, built with the codec's writer. Demo and test material only; production paths never call it.

Regenerate with `python -m rebalance_radar.pipelines.local.sample_dump samples/consumer_offsets.sample.jsonl`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rebalance_radar.pipelines.formats.dump import OFFSETS_TOPIC, DumpRecord, dump_line
from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from rebalance_radar.transforms.wire.coordinator_records import RECORD_TYPES, encode_coordinator_record
from rebalance_radar.transforms.wire.spec import FieldSpec, MessageSpec

GROUP = "payments"
BASE_TS = 1_763_780_000_000  # 2025-11-22T02:53:20Z
TOPIC_ID = "MKXx1fIkQy2J9jXHhK8m1w"
TELEMETRY_TOPIC = "radar.telemetry"

_STRING_BY_HINT = (
    ("group", GROUP),
    ("member", "consumer-1-5f0c9a9e-7d3b-4c1e-9a51-2a6f0e2b7c11"),
    ("instance", "payments-pod-0"),
    ("rack", "eu-west-1a"),
    ("clienthost", "/10.0.4.17"),
    ("client", "consumer-payments-1"),
    ("host", "10.0.4.17"),
    ("topic", "orders"),
    ("regex", "orders-.*"),
    ("assignor", "uniform"),
    ("process", "7b0d2c8e-2f6a-4b7e-8b1e-3d9f5a6c4e21"),
    ("protocol", "range"),
    ("subtopology", "0"),
)


def example_value(spec: MessageSpec, version: int, fields: tuple[FieldSpec, ...] | None = None) -> dict[str, Any]:
    """A plausible value for any definition at any version, driven by the definition itself."""
    out: dict[str, Any] = {}
    for f in spec.fields if fields is None else fields:
        if f.present_in(version):
            out[f.name] = _example_field(spec, version, f)
    return out


def _example_field(spec: MessageSpec, version: int, f: FieldSpec) -> Any:
    if f.is_array:
        if f.is_struct:
            return [example_value(spec, version, spec.struct_fields(f))]
        return [_example_scalar(f.element_type, f.name, i) for i in range(2)]
    if f.is_struct:
        return example_value(spec, version, spec.struct_fields(f))
    return _example_scalar(f.type, f.name, 0)


def _example_scalar(type_name: str, name: str, index: int) -> Any:
    lowered = name.lower()
    if type_name == "string":
        return next((text for hint, text in _STRING_BY_HINT if hint in lowered), name) + (f"-{index}" if index else "")
    if type_name == "bytes":
        return b"\x00\x01"
    if type_name == "uuid":
        return TOPIC_ID
    if type_name == "bool":
        return True
    if type_name == "float64":
        return 0.5
    if "timestamp" in lowered or lowered.endswith("ms"):
        return BASE_TS if "timestamp" in lowered else 45_000
    if "epoch" in lowered or "generation" in lowered:
        return 7
    return index + (3 if type_name in ("int32", "int64") else 1)


def consumer_members(count: int, version: int) -> list[dict[str, Any]]:
    """`count` GroupMetadata members of a `consumer` group, their subscription and assignment encoded for `version`."""
    members = []
    for i in range(count):
        subscription = encode_subscription(
            1 if version < 4 else 3,
            {"topics": ["orders"], "userData": None, "ownedPartitions": [{"topic": "orders", "partitions": [i]}]}
            | ({"generationId": 6, "rackId": "eu-west-1a"} if version >= 4 else {}),
        )
        assignment = encode_assignment(
            0, {"assignedPartitions": [{"topic": "orders", "partitions": [i]}], "userData": None}
        )
        member = {
            "memberId": f"consumer-payments-{i}-5f0c9a9e",
            "clientId": f"consumer-payments-{i}",
            "clientHost": f"/10.0.4.{17 + i}",
            "rebalanceTimeout": 300_000,
            "sessionTimeout": 45_000,
            "subscription": subscription,
            "assignment": assignment,
        }
        if version >= 3:
            member["groupInstanceId"] = None
        members.append(member)
    return members


def sample_records() -> list[DumpRecord]:
    """The sample's records, in offset order on two partitions of `__consumer_offsets` and one telemetry topic."""
    raw: list[tuple[bytes, bytes | None]] = []
    for value_version, commit_type in ((0, 0), (0, 1), (1, 1), (2, 1), (3, 1), (4, 1)):
        value = {"offset": 1200 + value_version, "leaderEpoch": 4, "metadata": "", "commitTimestamp": BASE_TS}
        value |= {"expireTimestamp": BASE_TS + 86_400_000, "topicId": TOPIC_ID}
        raw.append(
            encode_coordinator_record(
                commit_type, {"group": GROUP, "topic": "orders", "partition": value_version}, value_version, value
            )
        )
    for version in (0, 1, 3, 4):
        value = {
            "protocolType": "consumer",
            "generation": 6 + version,
            "protocol": "range",
            "leader": "consumer-payments-0-5f0c9a9e",
            "currentStateTimestamp": BASE_TS,
            "members": consumer_members(3, version),
        }
        raw.append(encode_coordinator_record(2, {"group": GROUP}, version, value))
    for record_type in RECORD_TYPES.values():
        if record_type.id in (0, 1, 2):
            continue
        key = example_value(record_type.key, record_type.key.valid.low)
        for version in record_type.value.valid:
            raw.append(
                encode_coordinator_record(record_type.id, key, version, example_value(record_type.value, version))
            )
    # tombstones
    raw.append(encode_coordinator_record(1, {"group": GROUP, "topic": "orders", "partition": 0}, None, None))
    raw.append(encode_coordinator_record(2, {"group": "retired-group"}, None, None))
    raw.append(encode_coordinator_record(5, {"groupId": GROUP, "memberId": "consumer-1-gone"}, None, None))
    # bad records: truncated value, unknown record type, newer value version, garbage key, empty value
    good_key, good_value = raw[4]
    raw.append((good_key, good_value[:-5]))  # type: ignore[index]
    raw.append((prim.INT16.pack(99) + b"\x00\x03abc", b"\x00\x00"))
    raw.append((good_key, prim.INT16.pack(9) + good_value[2:]))  # type: ignore[index]
    raw.append((b"\xff", b"\x00\x00"))
    raw.append((good_key, b""))

    records = [
        DumpRecord(OFFSETS_TOPIC, i % 2, i // 2, BASE_TS + i * 250, key, value) for i, (key, value) in enumerate(raw)
    ]
    telemetry = [
        b"[2025-11-22 02:53:21,101] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state "
        b"PreparingRebalance with old generation 9 (__consumer_offsets-12) (reason: removing member "
        b"consumer-payments-2-5f0c9a9e on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)",
        b"[2025-11-22 02:53:24,388] INFO [GroupCoordinator 1]: Stabilized group payments generation 10 "
        b"(__consumer_offsets-12) with 2 members (kafka.coordinator.group.GroupCoordinator)",
        b"not a log line at all \xff\xfe",
    ]
    records += [
        DumpRecord(TELEMETRY_TOPIC, 0, i, BASE_TS + 1_000 + i * 3_000, None, line) for i, line in enumerate(telemetry)
    ]
    return records


def write_sample_dump(path: Path) -> int:
    records = sample_records()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(dump_line(r) + "\n" for r in records), encoding="utf-8")
    return len(records)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "samples/consumer_offsets.sample.jsonl")
    print(f"wrote {write_sample_dump(target)} records to {target}")
