"""Message definitions as data: the vocabulary Kafka's own generator uses (fields, types, versions,
nullable/flexible/tagged versions, defaults), so one reader and one writer can interpret every message.
"""

from __future__ import annotations

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


def F(  # noqa: N802 - reads like the JSON definitions it mirrors
    name: str,
    type: str,
    versions: str,
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    flexible: str | None = None,
    fields: tuple[FieldSpec, ...] = (),
    **kwargs: Any,
) -> FieldSpec:
    """Build a FieldSpec from the same words Kafka's JSON uses (`F("memberId", "string", "0+")`)."""
    has_default = "default" in kwargs
    unknown = set(kwargs) - {"default"}
    if unknown:
        raise TypeError(f"unknown field attributes {sorted(unknown)} for {name}")
    return FieldSpec(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        tagged=Versions.parse(tagged),
        flexible=Versions.parse(flexible) if flexible is not None else None,
        default=kwargs.get("default"),
        has_default=has_default,
        fields=fields,
    )


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


def M(  # noqa: N802 - reads like the JSON definitions it mirrors
    name: str,
    kind: str,
    *,
    valid: str,
    flexible: str,
    fields: tuple[FieldSpec, ...],
    api_key: int | None = None,
    structs: dict[str, tuple[FieldSpec, ...]] | None = None,
) -> MessageSpec:
    """Build a MessageSpec from the words of Kafka's JSON (`validVersions`, `flexibleVersions`, ...)."""
    return MessageSpec(
        name=name,
        kind=kind,
        valid=Versions.parse(valid),
        flexible=Versions.parse(flexible),
        fields=fields,
        api_key=api_key,
        structs=structs or {},
    )
