"""The one exception the codec's readers raise: a typed decode failure the stream can quarantine.

Writing is not decoding: the writer refuses a value it cannot encode with `writer.EncodeError`."""

from __future__ import annotations

from enum import StrEnum


class DecodeErrorKind(StrEnum):
    """`malformed`: the bytes contradict the definition. `unsupported`: well-formed but unknown to the codec
    (record type, newer version), so a newer codec may read it."""

    MALFORMED = "malformed"
    UNSUPPORTED = "unsupported"


class DecodeError(Exception):
    """Bytes that cannot be decoded, with where and why: record type, version, byte offset, reason, kind."""

    def __init__(
        self,
        reason: str,
        *,
        kind: DecodeErrorKind = DecodeErrorKind.MALFORMED,
        offset: int | None = None,
        record_type: int | None = None,
        version: int | None = None,
        part: str | None = None,
    ) -> None:
        self.reason = reason
        self.kind = kind
        self.offset = offset
        self.record_type = record_type
        self.version = version
        self.part = part
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = []
        if self.part:
            where.append(self.part)
        if self.record_type is not None:
            where.append(f"record type {self.record_type}")
        if self.version is not None:
            where.append(f"version {self.version}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def __str__(self) -> str:
        return self.message

    def with_context(
        self, *, record_type: int | None = None, version: int | None = None, part: str | None = None
    ) -> DecodeError:
        """The same error with the record's coordinates filled in where the inner reader did not know them."""
        if record_type is not None and self.record_type is None:
            self.record_type = record_type
        if version is not None and self.version is None:
            self.version = version
        if part is not None and self.part is None:
            self.part = part
        self.args = (self.message,)
        return self
