"""Message definitions as data: the vocabulary Kafka's own generator uses (fields, types, versions,
nullable/flexible/tagged versions, defaults), read from Kafka's JSON definitions (`message_from_definition`), so
one reader and one writer can interpret every message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

FIXED_SIZES: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}
INTEGER_TYPES = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
VARIABLE_TYPES = frozenset({"string", "bytes", "records"})
PRIMITIVE_TYPES = frozenset(FIXED_SIZES) | VARIABLE_TYPES


@dataclass(frozen=True)
class Versions:
    """An inclusive version range as Kafka writes it: "0+", "1-3", "4", "none"."""

    low: int
    high: int  # inclusive; 32767 for open ranges

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]), 32767)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __iter__(self):
        return iter(range(self.low, self.high + 1))


NO_VERSIONS = Versions(0, -1)


@dataclass(frozen=True)
class FieldSpec:
    """One field: its JSON name (Kafka's camelCase), type and version ranges.

    `type` is a primitive, a struct name, or `[]element`. Struct fields come inline (`fields`) or from the
    message's common structs, resolved once by `MessageSpec`.
    """

    name: str
    type: str
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    flexible: Versions | None = None  # a field-level override of the message's flexible versions
    default: Any = None
    has_default: bool = False
    fields: tuple[FieldSpec, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVE_TYPES

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged and version in self.versions

    def default_value(self) -> Any:
        """The value a reader assumes when the field is absent (Kafka's implicit defaults)."""
        if self.has_default:
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return None
        return _IMPLICIT_DEFAULTS[self.type]


_IMPLICIT_DEFAULTS: dict[str, Any] = {
    "bool": False,
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "uint32": 0,
    "int64": 0,
    "float64": 0.0,
    "uuid": "AAAAAAAAAAAAAAAAAAAAAA",
    "string": "",
    "bytes": b"",
    "records": None,
}


@dataclass(frozen=True)
class MessageSpec:
    """A whole message (coordinator key/value, request, response, header or embedded data)."""

    name: str
    kind: str  # coordinator-key | coordinator-value | request | response | header | data
    valid: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]
    api_key: int | None = None
    structs: dict[str, tuple[FieldSpec, ...]] = field(default_factory=dict, hash=False, compare=False)

    def struct_fields(self, f: FieldSpec) -> tuple[FieldSpec, ...]:
        """The fields of a struct-typed field: inline, else the message's common struct of that name."""
        if f.fields:
            return f.fields
        try:
            return self.structs[f.element_type]
        except KeyError:
            raise KeyError(f"{self.name}: struct type {f.element_type} of field {f.name} is not defined") from None

    def absent_value(self, f: FieldSpec, version: int) -> Any:
        """What Kafka's generated code holds for field `f` when `version` of a message leaves it out: its default,
        and for a struct without one the empty struct (`new X()`: its untagged fields at theirs). A tagged field is
        written, and its JSON printed, only when it differs from this: a nullable tagged struct left null (a
        KIP-848 member's `classicMemberMetadata`) is written and printed as null."""
        if not f.is_struct or f.is_array or f.has_default:
            return f.default_value()
        return {
            sub.name: self.absent_value(sub, version)
            for sub in self.struct_fields(f)
            if sub.present_in(version) and not sub.tagged_in(version)
        }

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    @cached_property
    def short_name(self) -> str:
        """The record/API name without its Key/Value/Request/Response suffix."""
        for suffix in ("Key", "Value", "Request", "Response"):
            if self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name


# --- Kafka's JSON definitions ------------------------------------------------------------------------------------

_COMMENT_LINE = re.compile(r"^\s*//.*$", re.MULTILINE)


def read_definition(text: str) -> dict[str, Any]:
    """A Kafka message definition file: JSON with `//` comment lines (Kafka's parser allows them; JSON does not)."""
    return json.loads(_COMMENT_LINE.sub("", text))


def _lower_camel(name: str) -> str:
    """Kafka's field names are UpperCamel in the JSON and lowerCamel in its generated JSON form (and ours)."""
    return name[:1].lower() + name[1:]


def _definition_default(type_name: str, raw: Any) -> tuple[bool, Any]:
    """(has a default, its value) for a field's JSON `default`: Kafka's generator reads a JSON null as no default
    at all, the text "null" as null, and numbers and booleans from their text ("-1", "0x7f", "false")."""
    if raw is None:
        return False, None
    if raw == "null":
        return True, None
    if type_name in INTEGER_TYPES:
        return True, int(raw, 0) if isinstance(raw, str) else int(raw)
    if type_name == "bool":
        return True, raw if isinstance(raw, bool) else raw == "true"
    if type_name == "float64":
        return True, float(raw)
    return True, raw


def field_from_definition(data: Mapping[str, Any]) -> FieldSpec:
    """One field of a JSON definition (a tagged-only field may leave out "versions": its tagged versions hold)."""
    has_default, default = _definition_default(data["type"], data.get("default"))
    return FieldSpec(
        name=_lower_camel(data["name"]),
        type=data["type"],
        versions=Versions.parse(data.get("versions", data.get("taggedVersions"))),
        nullable=Versions.parse(data.get("nullableVersions")),
        tag=data.get("tag"),
        tagged=Versions.parse(data.get("taggedVersions")),
        flexible=Versions.parse(data["flexibleVersions"]) if "flexibleVersions" in data else None,
        default=default,
        has_default=has_default,
        fields=tuple(field_from_definition(sub) for sub in data.get("fields", ())),
    )


def message_from_definition(data: Mapping[str, Any]) -> MessageSpec:
    """A whole JSON definition (`read_definition`) as the interpreter's `MessageSpec`."""
    return MessageSpec(
        name=data["name"],
        kind=data["type"],
        valid=Versions.parse(data["validVersions"]),
        flexible=Versions.parse(data["flexibleVersions"]),
        fields=tuple(field_from_definition(f) for f in data["fields"]),
        api_key=data.get("apiKey"),
        structs={
            struct["name"]: tuple(field_from_definition(f) for f in struct["fields"])
            for struct in data.get("commonStructs", ())
        },
    )
