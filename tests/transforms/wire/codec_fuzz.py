"""The codec fuzzing engine: valid seed encodings, their mutations, and a report of what the decoders did.

The stream quarantines a `DecodeError`; anything else (IndexError, struct.error, MemoryError, a hang) would kill a
micro-batch, so the codec's contract is checked on every decoder the stream and the tap use. test_fuzz.py runs it
bounded; `python -m benchmarks.fuzz_codec` runs millions of inputs with the same engine.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.consumer_protocol import decode_assignment, decode_subscription
from rebalance_radar.transforms.wire.coordinator_records import (
    RECORD_TYPES,
    decode_coordinator_record,
    encode_coordinator_record,
)
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.frames import (
    APIS,
    Direction,
    decode_body,
    decode_request,
    decode_response,
    request_header_version,
    response_header_version,
)
from rebalance_radar.transforms.wire.messages import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    REQUEST_HEADER,
)
from rebalance_radar.transforms.wire.spec import FieldSpec, MessageSpec
from rebalance_radar.transforms.wire.writer import write_message

Decoder = Callable[[bytes], Any]

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
TEXT_ALPHABET = "abcXYZ019-_.:é€漢😀"
# Lengths a corrupted prefix may claim: the int32/int16 extremes, and varints that are huge, negative-ish or overlong.
HOSTILE_INT32 = (
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x00\x01\x00\x00",
    b"\xff\xff\xff\xfe",
)
HOSTILE_INT16 = (b"\x7f\xff", b"\xff\xff", b"\x80\x00", b"\xff\xfe")
HOSTILE_VARINTS = (b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\x03")


def random_value(
    spec: MessageSpec, version: int, rng: random.Random, fields: tuple[FieldSpec, ...] | None = None, depth: int = 0
) -> dict[str, Any]:
    """A valid value of `spec` at `version` (the writer's input form), with nulls, tagged fields and non-ASCII."""
    out: dict[str, Any] = {}
    for f in spec.fields if fields is None else fields:
        if not f.present_in(version):
            continue
        tagged = f.tagged_in(version)
        if tagged and rng.random() < 0.5:
            continue
        value = _random_field(spec, version, f, rng, depth)
        if tagged and value == f.default_value():
            continue
        out[f.name] = value
    return out


def _random_field(spec: MessageSpec, version: int, f: FieldSpec, rng: random.Random, depth: int) -> Any:
    if version in f.nullable and rng.random() < 0.15:
        return None
    if f.is_array:
        return [_random_element(spec, version, f, rng, depth) for _ in range(rng.randrange(4 if depth < 2 else 2))]
    return _random_element(spec, version, f, rng, depth)


def _random_element(spec: MessageSpec, version: int, f: FieldSpec, rng: random.Random, depth: int) -> Any:
    type_name = f.element_type
    if f.is_struct:
        return random_value(spec, version, rng, spec.struct_fields(f), depth + 1)
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return rng.choice((lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi), rng.randint(0, 100)))
    if type_name == "bool":
        return rng.random() < 0.5
    if type_name == "float64":
        return rng.uniform(-1e9, 1e9)
    if type_name == "uuid":
        return prim.uuid_to_text(rng.randbytes(16))
    if type_name == "string":
        return "".join(rng.choice(TEXT_ALPHABET) for _ in range(rng.randrange(10)))
    return rng.randbytes(rng.randrange(12))


@dataclass(frozen=True)
class Seed:
    """One valid encoding and the decoder that reads it; mutations of `data` are fed to `decode`."""

    label: str
    decode: Decoder
    data: bytes


def _record_seeds(rng: random.Random) -> list[Seed]:
    seeds = []
    for rt in RECORD_TYPES.values():
        for version in rt.value.valid:
            key = random_value(rt.key, rt.key.valid.low, rng)
            key_bytes, value_bytes = encode_coordinator_record(
                rt.id, key, version, random_value(rt.value, version, rng)
            )
            assert value_bytes is not None

            def with_value(data: bytes, value: bytes = value_bytes) -> Any:
                return decode_coordinator_record(data, value)

            def with_key(data: bytes, key: bytes = key_bytes) -> Any:
                return decode_coordinator_record(key, data)

            seeds.append(Seed(f"record {rt.name} key", with_value, key_bytes))
            seeds.append(Seed(f"record {rt.name} v{version} value", with_key, value_bytes))
    return seeds


def _protocol_seeds(rng: random.Random) -> list[Seed]:
    seeds = []
    for api in APIS.values():
        for version in api.request.valid:
            body = write_message(api.request, version, random_value(api.request, version, rng))
            header_version = request_header_version(api, version)
            header = random_value(REQUEST_HEADER, header_version, rng)
            header |= {"requestApiKey": api.key, "requestApiVersion": version}
            framed = write_message(REQUEST_HEADER, header_version, header) + body
            seeds.append(Seed(f"{api.name} v{version} request body", _body_decoder(api.key, version, "request"), body))
            seeds.append(
                Seed(f"{api.name} v{version} framed request", decode_request, prim.INT32.pack(len(framed)) + framed)
            )
        for version in api.response.valid:
            body = write_message(api.response, version, random_value(api.response, version, rng))
            seeds.append(
                Seed(f"{api.name} v{version} response body", _body_decoder(api.key, version, "response"), body)
            )
            # header v1 ends with an empty tagged-field section (ApiVersions always answers with v0)
            tagged = b"\x00" if response_header_version(api, version) == 1 else b""
            framed = prim.INT32.pack(rng.randrange(2**31)) + tagged
            framed = prim.INT32.pack(len(framed) + len(body)) + framed + body
            seeds.append(Seed(f"{api.name} v{version} framed response", _response_decoder(api.key, version), framed))
    for spec, decoder in (
        (CONSUMER_PROTOCOL_SUBSCRIPTION, decode_subscription),
        (CONSUMER_PROTOCOL_ASSIGNMENT, decode_assignment),
    ):
        for version in spec.valid:
            payload = prim.INT16.pack(version) + write_message(spec, version, random_value(spec, version, rng))
            seeds.append(Seed(f"{spec.name} v{version}", decoder, payload))
    return seeds


def _body_decoder(api_key: int, version: int, direction: Direction) -> Decoder:
    return lambda data: decode_body(api_key, version, direction, data)


def _response_decoder(api_key: int, version: int) -> Decoder:
    return lambda data: decode_response(data, api_key, version)


def build_seeds(seed: int = 0) -> list[Seed]:
    """Valid encodings of every coordinator record type/version, every body, framed request and response."""
    rng = random.Random(seed)
    return _record_seeds(rng) + _protocol_seeds(rng)


def _overwrite(data: bytes, pos: int, patch: bytes) -> bytes:
    return data[:pos] + patch + data[pos + len(patch) :]


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of a valid encoding, named so a report can say which kinds find what."""
    n = len(data)
    kind = rng.choice(
        ("truncate", "byte", "bit", "length32", "length16", "varint", "insert", "delete", "splice", "trailing")
    )
    pos = rng.randrange(n) if n else 0
    if kind == "truncate":
        return kind, data[: rng.randrange(n)] if n else data
    if kind == "byte" and n:
        return kind, _overwrite(data, pos, bytes([rng.randrange(256)]))
    if kind == "bit" and n:
        return kind, _overwrite(data, pos, bytes([data[pos] ^ (1 << rng.randrange(8))]))
    if kind == "length32":
        return kind, _overwrite(data, pos, rng.choice(HOSTILE_INT32))
    if kind == "length16":
        return kind, _overwrite(data, pos, rng.choice(HOSTILE_INT16))
    if kind == "varint":
        return kind, data[:pos] + rng.choice(HOSTILE_VARINTS) + data[pos + rng.randrange(3) :]
    if kind == "insert":
        return kind, data[:pos] + rng.randbytes(rng.randrange(1, 8)) + data[pos:]
    if kind == "delete":
        return kind, data[:pos] + data[pos + rng.randrange(1, 8) :]
    if kind == "splice":
        start = rng.randrange(n + 1)
        return kind, data[:pos] + data[start : start + rng.randrange(1, 16)] + data[pos:]
    return "trailing", data + rng.randbytes(rng.randrange(1, 8))


def fuzz_inputs(seeds: list[Seed], count: int, rng: random.Random) -> Iterator[tuple[Seed, str, bytes]]:
    """`count` inputs: 1 in 8 entirely random bytes (half behind a valid record type or size), the rest mutations
    (one in four stacked twice)."""
    for _ in range(count):
        seed = rng.choice(seeds)
        if rng.random() < 0.125:
            noise = rng.randbytes(rng.randrange(64))
            if rng.random() < 0.5:
                noise = seed.data[:2] + noise
            yield seed, "random", noise
            continue
        kind, data = mutate(seed.data, rng)
        if rng.random() < 0.25:
            second, data = mutate(data, rng)
            kind = f"{kind}+{second}"
        yield seed, kind, data


@dataclass
class FuzzReport:
    """What the codec did with every input: the counts a reader of the JSON needs, and the failures to fix."""

    inputs: int = 0
    successes: int = 0
    decode_errors: Counter[str] = field(default_factory=Counter)
    other_exceptions: list[str] = field(default_factory=list)
    other_exception_count: int = 0
    max_seconds: float = 0.0  # CPU time of the slowest input
    slowest: str = ""
    slowest_call: tuple[Decoder, bytes] | None = None  # to time it again: a pause is once, spinning every time

    def as_json(self, elapsed: float) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "successes": self.successes,
            "decode_errors": dict(sorted(self.decode_errors.items())),
            "other_exceptions": self.other_exception_count,
            "other_exception_examples": self.other_exceptions[:10],
            "max_cpu_seconds_per_input": round(self.max_seconds, 6),
            "slowest_input": self.slowest,
            "elapsed_s": round(elapsed, 2),
            "inputs_per_s": round(self.inputs / elapsed) if elapsed else None,
        }


def check(report: FuzzReport, label: str, decode: Decoder, data: bytes) -> None:
    """Decode one input and record the outcome; a non-`DecodeError` is kept with its input in hex.

    Time is this thread's CPU time: a hang is the codec spinning, not the machine, or the test run's other threads
    (its live recordings), being busy with other work."""
    start = time.thread_time()
    try:
        decode(data)
    except DecodeError as exc:
        report.decode_errors[str(exc.kind)] += 1
    except Exception as exc:
        report.other_exception_count += 1
        if len(report.other_exceptions) < 100:
            report.other_exceptions.append(f"{label}: {type(exc).__name__}: {exc} on input {data.hex()}")
    else:
        report.successes += 1
    elapsed = time.thread_time() - start
    report.inputs += 1
    if elapsed > report.max_seconds:
        report.max_seconds, report.slowest = elapsed, f"{label} ({len(data)} bytes)"
        report.slowest_call = (decode, data)


def least_cpu_seconds(decode: Decoder, data: bytes, tries: int = 3) -> float:
    """The least CPU time of `tries` decodes of one input: a collector pause or a reader compiled on first use
    happens once, a codec that spins on the input every time."""
    least = float("inf")
    for _ in range(tries):
        start = time.thread_time()
        with contextlib.suppress(DecodeError):
            decode(data)
        least = min(least, time.thread_time() - start)
    return least


def run(count: int, seed: int = 0, progress: Callable[[int], None] | None = None) -> FuzzReport:
    """Decode `count` seeded random/mutated inputs; `progress` is called every 50,000 inputs."""
    seeds = build_seeds(seed)
    for base in seeds:  # compiles every reader outside the timed calls, and proves each seed is valid
        base.decode(base.data)
    rng = random.Random(seed + 1)
    report = FuzzReport()
    for i, (base, kind, data) in enumerate(fuzz_inputs(seeds, count, rng), 1):
        check(report, f"{base.label} [{kind}]", base.decode, data)
        if progress is not None and i % 50_000 == 0:
            progress(i)
    return report
