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

from transforms.wire import primitives as prim
from transforms.wire.errors import DecodeError, DecodeErrorKind
from transforms.wire.spec import FIXED_SIZES, FieldSpec, MessageSpec

StructReader = Callable[[bytes, int, int], tuple[Any, int]]


def read_tagged_fields(
    buf: bytes, pos: int, end: int, out: dict[str, Any], table: dict[int, tuple[str, StructReader, Any]]
) -> int:
    """A tagged-field section: known tags are decoded inside their own size, unknown ones skipped."""
    count, pos = prim.read_uvarint(buf, pos, end)
    if count > end - pos:
        raise DecodeError(f"{count} tagged fields cannot fit in {end - pos} bytes", offset=pos)
    for _ in range(count):
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
        """Emit a reader for a struct's fields; returns the function's name."""
        fn = self._name("_read_struct_")
        body: list[str] = ["d = {}"]
        run: list[FieldSpec] = []
        tagged: list[FieldSpec] = []

        def flush() -> None:
            if not run:
                return
            fmt = ">" + "".join(prim.STRUCT_CODES[f.type] for f in run)
            size = struct.calcsize(fmt)
            packer = self._name("_S")
            self.namespace[packer] = struct.Struct(fmt)
            names = ", ".join(f.name for f in run)
            targets = ", ".join(f"d[{f.name!r}]" for f in run)
            body.append(f"if p + {size} > e: raise prim.truncated(p, {size}, e, {names!r})")
            body.append(f"({targets},) = {packer}.unpack_from(b, p)")
            body.append(f"p += {size}")
            body.extend(f"d[{f.name!r}] = prim.uuid_to_text(d[{f.name!r}])" for f in run if f.type == "uuid")
            run.clear()

        for f in fields:
            if not f.present_in(self.version):
                continue
            if f.tagged_in(self.version):
                tagged.append(f)
                continue
            if not f.is_array and f.type in FIXED_SIZES:
                run.append(f)
                continue
            flush()
            body.extend(self._variable_field(f))
        flush()
        if self.flexible:
            table = self._name("_TAGS")
            self.namespace[table] = {f.tag: (f.name, self._tagged_reader(f), f.default_value()) for f in tagged}
            body.append(f"p = read_tagged_fields(b, p, e, d, {table})")
        body.append("return d, p")
        self.chunks.append(f"def {fn}(b, p, e):\n" + "\n".join("    " + line for line in body))
        return fn

    def _variable_field(self, f: FieldSpec) -> list[str]:
        compact = self._field_compact(f)
        nullable = self.version in f.nullable
        n = repr(f.name)
        if f.is_array:
            elem = f.element_type
            if elem in FIXED_SIZES:
                code = prim.STRUCT_CODES[elem]
                return [
                    f"d[{n}], p = _array_of_fixed(b, p, e, {compact}, {nullable}, {n}, {code!r}, {FIXED_SIZES[elem]})"
                ]
            if elem == "string":
                return [f"d[{n}], p = _array_of_strings(b, p, e, {compact}, {nullable}, {n})"]
            if elem == "bytes":
                return [f"d[{n}], p = _array_of_bytes(b, p, e, {compact}, {nullable}, {n})"]
            sub = self._struct(self.spec.struct_fields(f))
            return [
                f"cnt, p = prim.read_array_length(b, p, e, {compact}, {nullable}, {n}, 1)",
                "if cnt is None:",
                f"    d[{n}] = None",
                "else:",
                "    items = []",
                "    for _ in range(cnt):",
                f"        item, p = {sub}(b, p, e)",
                "        items.append(item)",
                f"    d[{n}] = items",
            ]
        if f.type == "string":
            return [f"d[{n}], p = prim.read_string(b, p, e, {compact}, {nullable}, {n})"]
        if f.type in ("bytes", "records"):
            return [f"d[{n}], p = prim.read_bytes(b, p, e, {compact}, {nullable}, {n})"]
        sub = self._struct(self.spec.struct_fields(f))
        if nullable:
            return [
                "if p >= e: raise prim.truncated(p, 1, e, 'struct marker')",
                "if b[p] >= 0x80:",
                "    p += 1",
                f"    d[{n}] = None",
                "else:",
                "    p += 1",
                f"    d[{n}], p = {sub}(b, p, e)",
            ]
        return [f"d[{n}], p = {sub}(b, p, e)"]

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
    if version not in spec.valid:
        raise DecodeError(
            f"{spec.name} version {version} is not known to this codec (knows {spec.valid.low}-{spec.valid.high})",
            kind=DecodeErrorKind.UNSUPPORTED,
            version=version,
        )
    return compiled_reader(spec, version)(data, pos, len(data) if end is None else end)
