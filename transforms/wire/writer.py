"""The one writer: encodes any `MessageSpec` at any version from the reader's value form.

It writes the requests of `radar poll-groups`' wire client and of the test groups it drives, and the bytes of tests,
demos and the simulator; the ingest only reads. Missing fields take their default; tagged fields are written only
when they differ from their default, as Kafka does.
"""

from __future__ import annotations

import struct
from typing import Any

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.spec import FIXED_SIZES, FieldSpec, MessageSpec


class EncodeError(ValueError):
    """A value that cannot be written at the requested version (wrong type, null where not nullable...)."""


def write_message(spec: MessageSpec, version: int, value: dict[str, Any]) -> bytes:
    """Encode `value` as `spec` at `version`."""
    if version not in spec.valid:
        raise EncodeError(f"{spec.name} has no version {version} (valid {spec.valid.low}-{spec.valid.high})")
    out = bytearray()
    _write_struct(out, spec, version, spec.fields, value)
    return bytes(out)


def _compact(spec: MessageSpec, f: FieldSpec, version: int) -> bool:
    flexible = f.flexible if f.flexible is not None else spec.flexible
    return version in flexible


def _write_struct(
    out: bytearray, spec: MessageSpec, version: int, fields: tuple[FieldSpec, ...], value: dict[str, Any]
) -> None:
    tagged: list[tuple[FieldSpec, Any]] = []
    for f in fields:
        if not f.present_in(version):
            continue
        if f.tagged_in(version):
            absent = spec.absent_value(f, version)
            v = value.get(f.name, absent) if value is not None else absent
            if v != absent:
                tagged.append((f, v))
            continue
        v = value.get(f.name, f.default_value()) if value is not None else f.default_value()
        _write_field(out, spec, version, f, v, _compact(spec, f, version), tagged=False)
    if spec.is_flexible(version):
        tagged.sort(key=lambda item: item[0].tag if item[0].tag is not None else -1)
        prim.write_uvarint(out, len(tagged))
        for f, v in tagged:
            payload = bytearray()
            _write_field(payload, spec, version, f, v, compact=True, tagged=True)
            prim.write_uvarint(out, f.tag if f.tag is not None else 0)
            prim.write_uvarint(out, len(payload))
            out += payload


def _write_field(
    out: bytearray, spec: MessageSpec, version: int, f: FieldSpec, v: Any, compact: bool, tagged: bool
) -> None:
    nullable = version in f.nullable
    if v is None and not nullable and (f.is_array or f.type in ("string", "bytes") or f.is_struct):
        raise EncodeError(f"{spec.name}.{f.name} is not nullable in version {version}")
    if f.is_array:
        if v is None:
            prim.write_length(out, -1, compact, wide=True)
            return
        prim.write_length(out, len(v), compact, wide=True)
        elem = f.element_type
        if elem in FIXED_SIZES:
            for item in v:
                _write_fixed(out, elem, item)
        elif elem == "string":
            for item in v:
                prim.write_string(out, item, compact)
        elif elem == "bytes":
            for item in v:
                prim.write_bytes(out, item, compact)
        else:
            sub = spec.struct_fields(f)
            for item in v:
                _write_struct(out, spec, version, sub, item)
        return
    if f.type == "string":
        prim.write_string(out, v, compact)
    elif f.type in ("bytes", "records"):
        prim.write_bytes(out, v, compact)
    elif f.type in FIXED_SIZES:
        _write_fixed(out, f.type, v)
    else:
        sub = spec.struct_fields(f)
        if nullable:
            if tagged:
                prim.write_uvarint(out, 0 if v is None else 1)
            else:
                out += prim.INT8.pack(-1 if v is None else 1)
            if v is None:
                return
        _write_struct(out, spec, version, sub, v)


def _write_fixed(out: bytearray, type_name: str, v: Any) -> None:
    try:
        if type_name == "uuid":
            out += prim.uuid_from_text(v)
        else:
            out += struct.pack(">" + prim.STRUCT_CODES[type_name], v)
    except (struct.error, ValueError, TypeError) as exc:
        raise EncodeError(f"cannot write {v!r} as {type_name}: {exc}") from exc
