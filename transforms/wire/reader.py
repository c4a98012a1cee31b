"""The one reader: interprets any `MessageSpec` at any version.

Like Kafka's generator, it turns a definition into straight-line code, once per (message, version), and caches
it: consecutive fixed-width fields become one `struct.unpack_from`, variable-length fields call the bounded
primitives. Decoded values use Kafka's JSON field names; uuids are rendered as Kafka prints them, bytes stay bytes.
Absent fields are left out; tagged fields appear only when they differ from their default.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.errors import DecodeError, DecodeErrorKind
from rebalance_radar.transforms.wire.spec import FIXED_SIZES, FieldSpec, MessageSpec

StructReader = Callable[[bytes, int, int], tuple[Any, int]]


def read_tagged_fields(
    buf: bytes, pos: int, end: int, out: dict[str, Any], table: dict[int, tuple[str, StructReader, Any]]
) -> int:
    """A tagged-field section: known tags are decoded inside their own size, unknown ones skipped.

    Counts, tags and sizes are nearly always one-byte varints; those are read inline, the rest by `read_uvarint`.
    """
    if pos < end and buf[pos] < 0x80:
        count = buf[pos]
        pos += 1
    else:
        count, pos = prim.read_uvarint(buf, pos, end)
    if count > end - pos:
        raise DecodeError(f"{count} tagged fields cannot fit in {end - pos} bytes", offset=pos)
    for _ in range(count):
        if pos + 1 < end and buf[pos] < 0x80 and buf[pos + 1] < 0x80:
            tag = buf[pos]
            size = buf[pos + 1]
            pos += 2
        else:
            tag, pos = prim.read_uvarint(buf, pos, end)
            size, pos = prim.read_uvarint(buf, pos, end)
        stop = pos + size
        if stop > end:
            raise prim.truncated(pos, size, end, f"tagged field {tag}")
        entry = table.get(tag)
        if entry is not None:
            name, reader, default = entry
            value, _ = reader(buf, pos, stop)
            if value != default:
                out[name] = value
        pos = stop
    return pos


def _array_of_fixed(
    buf: bytes, pos: int, end: int, compact: bool, nullable: bool, name: str, code: str, size: int
) -> tuple[list[Any] | None, int]:
    n, pos = prim.read_array_length(buf, pos, end, compact, nullable, name, size)
    if n is None:
        return None, pos
    stop = pos + n * size
    if code == "16s":
        # Not `f">{n}16s"`: a count before `16s` is read as the string's length ("316s"), not as a repeat count.
        return [prim.uuid_to_text(buf[i : i + 16]) for i in range(pos, stop, 16)], stop
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), stop


def _array_of_strings(
    buf: bytes, pos: int, end: int, compact: bool, nullable: bool, name: str
) -> tuple[list[str | None] | None, int]:
    n, pos = prim.read_array_length(buf, pos, end, compact, nullable, name, 1)
    if n is None:
        return None, pos
    values = []
    for _ in range(n):
        value, pos = prim.read_string(buf, pos, end, compact, False, name)
        values.append(value)
    return values, pos


def _array_of_bytes(
    buf: bytes, pos: int, end: int, compact: bool, nullable: bool, name: str
) -> tuple[list[bytes | None] | None, int]:
    n, pos = prim.read_array_length(buf, pos, end, compact, nullable, name, 1)
    if n is None:
        return None, pos
    values = []
    for _ in range(n):
        value, pos = prim.read_bytes(buf, pos, end, compact, False, name)
        values.append(value)
    return values, pos


class _Compiler:
    """Emits Python source for one message at one version; each struct becomes a function."""

    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.spec = spec
        self.version = version
        self.flexible = spec.is_flexible(version)
        self.chunks: list[str] = []
        self.namespace: dict[str, Any] = {
            "prim": prim,
            "DecodeError": DecodeError,
            "read_tagged_fields": read_tagged_fields,
            "_array_of_fixed": _array_of_fixed,
            "_array_of_strings": _array_of_strings,
            "_array_of_bytes": _array_of_bytes,
            "_unpack_int16": prim.INT16.unpack_from,
            "_unpack_int32": prim.INT32.unpack_from,
            "uuid_to_text": prim.uuid_to_text,
        }
        self.counter = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def compile(self) -> StructReader:
        entry = self._struct(self.spec.fields)
        source = "\n\n".join(self.chunks)
        code = compile(source, f"<reader {self.spec.name} v{self.version}>", "exec")
        exec(code, self.namespace)
        return self.namespace[entry]

    def _field_compact(self, f: FieldSpec) -> bool:
        flexible = f.flexible if f.flexible is not None else self.spec.flexible
        return self.version in flexible

    def _struct(self, fields: tuple[FieldSpec, ...]) -> str:
        """Emit a reader for a struct's fields; returns the function's name.

        Fields are read into locals and the dict is built once at the end (cheaper than a store per field); the
        dict literal keeps the fields in definition order, and tagged fields follow, as Kafka's formatters print.
        """
        fn = self._name("_read_struct_")
        body: list[str] = []
        run: list[tuple[FieldSpec, str]] = []
        tagged: list[FieldSpec] = []
        targets: list[tuple[str, str]] = []

        def flush() -> None:
            if not run:
                return
            fmt = ">" + "".join(prim.STRUCT_CODES[f.type] for f, _ in run)
            size = struct.calcsize(fmt)
            unpack = self._name("_unpack")
            self.namespace[unpack] = struct.Struct(fmt).unpack_from
            names = ", ".join(f.name for f, _ in run)
            body.append(f"if p + {size} > e: raise prim.truncated(p, {size}, e, {names!r})")
            body.append(f"({', '.join(v for _, v in run)},) = {unpack}(b, p)")
            body.append(f"p += {size}")
            body.extend(f"{v} = uuid_to_text({v})" for f, v in run if f.type == "uuid")
            run.clear()

        for f in fields:
            if not f.present_in(self.version):
                continue
            if f.tagged_in(self.version):
                tagged.append(f)
                continue
            target = f"v{len(targets)}"
            targets.append((f.name, target))
            if not f.is_array and f.type in FIXED_SIZES:
                run.append((f, target))
                continue
            flush()
            body.extend(self._variable_field(f, target))
        flush()
        body.append("d = {" + ", ".join(f"{name!r}: {target}" for name, target in targets) + "}")
        if self.flexible:
            table = self._name("_TAGS")
            self.namespace[table] = {
                f.tag: (f.name, self._tagged_reader(f), self.spec.absent_value(f, self.version)) for f in tagged
            }
            # Most records carry no tagged field: one byte 0x00, read inline.
            body.append("if p < e and b[p] == 0:")
            body.append("    p += 1")
            body.append("else:")
            body.append(f"    p = read_tagged_fields(b, p, e, d, {table})")
        body.append("return d, p")
        self.chunks.append(f"def {fn}(b, p, e):\n" + "\n".join("    " + line for line in body))
        return fn

    def _length_prefixed(self, f: FieldSpec, target: str, compact: bool, nullable: bool) -> list[str]:
        """Inline read of a string or bytes field: the same checks, messages and offsets as `prim.read_string` /
        `prim.read_bytes`, without two calls per field (the hot path of every coordinator record)."""
        is_string = f.type == "string"
        what = f"{'string' if is_string else 'bytes'} {f.name}"
        if compact:
            lines = [
                "if p < e and b[p] < 0x80:",
                "    n = b[p] - 1",
                "    q = p + 1",
                "else:",
                "    n, q = prim.read_uvarint(b, p, e)",
                "    n -= 1",
            ]
        else:
            width, unpack = (2, "_unpack_int16") if is_string else (4, "_unpack_int32")
            lines = [
                f"if p + {width} > e: raise prim.truncated(p, {width}, e, 'length')",
                f"n = {unpack}(b, p)[0]",
                f"q = p + {width}",
            ]
        lines.append("if n < 0:")
        if nullable:
            lines += [f"    {target} = None", "    p = q"]
        else:
            lines.append(f"    raise DecodeError({f'non-nullable field {f.name} was serialized as null'!r}, offset=p)")
        lines.append("else:")
        if is_string and compact:
            invalid = f"string field {f.name} had invalid length "
            lines.append(f"    if n > {prim.MAX_STRING_LENGTH}: raise DecodeError({invalid!r} + str(n), offset=p)")
        lines += [
            "    p = q + n",
            f"    if p > e: raise prim.truncated(q, n, e, {what!r})",
            f"    {target} = b[q:p].decode('utf-8', 'replace')" if is_string else f"    {target} = b[q:p]",
        ]
        return lines

    def _variable_field(self, f: FieldSpec, target: str) -> list[str]:
        compact = self._field_compact(f)
        nullable = self.version in f.nullable
        n = repr(f.name)
        if f.is_array:
            elem = f.element_type
            if elem in FIXED_SIZES:
                code = prim.STRUCT_CODES[elem]
                return [
                    f"{target}, p = _array_of_fixed(b, p, e, {compact}, {nullable}, {n}, {code!r}, {FIXED_SIZES[elem]})"
                ]
            if elem == "string":
                return [f"{target}, p = _array_of_strings(b, p, e, {compact}, {nullable}, {n})"]
            if elem == "bytes":
                return [f"{target}, p = _array_of_bytes(b, p, e, {compact}, {nullable}, {n})"]
            sub = self._struct(self.spec.struct_fields(f))
            return [
                f"cnt, p = prim.read_array_length(b, p, e, {compact}, {nullable}, {n}, 1)",
                "if cnt is None:",
                f"    {target} = None",
                "else:",
                f"    {target} = []",
                "    for _ in range(cnt):",
                f"        item, p = {sub}(b, p, e)",
                f"        {target}.append(item)",
            ]
        if f.type in ("string", "bytes", "records"):
            return self._length_prefixed(f, target, compact, nullable)
        sub = self._struct(self.spec.struct_fields(f))
        if nullable:
            return [
                "if p >= e: raise prim.truncated(p, 1, e, 'struct marker')",
                "if b[p] >= 0x80:",
                "    p += 1",
                f"    {target} = None",
                "else:",
                "    p += 1",
                f"    {target}, p = {sub}(b, p, e)",
            ]
        return [f"{target}, p = {sub}(b, p, e)"]

    def _tagged_reader(self, f: FieldSpec) -> StructReader:
        """A reader for one tagged field's payload; tagged fields always use the compact encodings."""
        nullable = self.version in f.nullable
        name = f.name
        if f.is_array:
            elem = f.element_type
            if elem in FIXED_SIZES:
                code, size = prim.STRUCT_CODES[elem], FIXED_SIZES[elem]
                return lambda b, p, e: _array_of_fixed(b, p, e, True, nullable, name, code, size)
            if elem == "string":
                return lambda b, p, e: _array_of_strings(b, p, e, True, nullable, name)
            if elem == "bytes":
                return lambda b, p, e: _array_of_bytes(b, p, e, True, nullable, name)
            sub = self.namespace_function(self._struct(self.spec.struct_fields(f)))

            def read_struct_array(b: bytes, p: int, e: int) -> tuple[list[Any] | None, int]:
                cnt, p = prim.read_array_length(b, p, e, True, nullable, name, 1)
                if cnt is None:
                    return None, p
                items = []
                for _ in range(cnt):
                    item, p = sub(b, p, e)
                    items.append(item)
                return items, p

            return read_struct_array
        if f.type == "string":
            return lambda b, p, e: prim.read_string(b, p, e, True, nullable, name)
        if f.type in ("bytes", "records"):
            return lambda b, p, e: prim.read_bytes(b, p, e, True, nullable, name)
        if f.type in FIXED_SIZES:
            packer = struct.Struct(">" + prim.STRUCT_CODES[f.type])
            is_uuid = f.type == "uuid"

            def read_fixed(b: bytes, p: int, e: int) -> tuple[Any, int]:
                if p + packer.size > e:
                    raise prim.truncated(p, packer.size, e, name)
                value = packer.unpack_from(b, p)[0]
                return (prim.uuid_to_text(value) if is_uuid else value), p + packer.size

            return read_fixed
        sub = self.namespace_function(self._struct(self.spec.struct_fields(f)))
        if not nullable:
            return sub

        def read_nullable_struct(b: bytes, p: int, e: int) -> tuple[Any, int]:
            marker, p = prim.read_uvarint(b, p, e)
            if marker == 0:
                return None, p
            return sub(b, p, e)

        return read_nullable_struct

    def namespace_function(self, name: str) -> StructReader:
        """Late-bound access to a struct reader that is only defined once the module source is executed."""
        namespace = self.namespace
        return lambda b, p, e: namespace[name](b, p, e)


_COMPILED: dict[tuple[int, int], tuple[MessageSpec, StructReader]] = {}


def compiled_reader(spec: MessageSpec, version: int) -> StructReader:
    """The compiled reader for `spec` at `version`, compiled once per process (keyed by identity: hashing a
    whole definition on every record would cost more than decoding it)."""
    key = (id(spec), version)
    hit = _COMPILED.get(key)
    if hit is None:
        hit = _COMPILED[key] = (spec, _Compiler(spec, version).compile())
    return hit[1]


def read_message(
    spec: MessageSpec, version: int, data: bytes, pos: int = 0, end: int | None = None
) -> tuple[dict[str, Any], int]:
    """Decode `spec` at `version` from `data[pos:end]`; returns the value and the position after it."""
    hit = _COMPILED.get((id(spec), version))  # a compiled (spec, version) was validated when it was compiled
    if hit is None:
        if version not in spec.valid:
            raise DecodeError(
                f"{spec.name} version {version} is not known to this codec (knows {spec.valid.low}-{spec.valid.high})",
                kind=DecodeErrorKind.UNSUPPORTED,
                version=version,
            )
        return compiled_reader(spec, version)(data, pos, len(data) if end is None else end)
    return hit[1](data, pos, len(data) if end is None else end)
