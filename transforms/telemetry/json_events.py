"""The project's own JSON heartbeat event, `radar.event/1`, as emitted by the agent wrapping confluent-kafka consumers.

One JSON object per Kafka record (or per line of a JSON Lines record):

    {
      "schema": "radar.event/1",          required, exactly this string; a new field means a new version
      "event": "commit_failed",           required, a HeartbeatEventKind value
      "ts": 1714564800123,                required, event time, epoch milliseconds (integer, >= 0)
      "group_id": "orders",               required, non-empty
      "member_id": "rdkafka-7f3c...",     optional, the member id at the time of the event
      "group_instance_id": "orders-0",    optional, static membership
      "generation": 42,                   optional, classic generation (integer)
      "member_epoch": 7,                  optional, KIP-848 member epoch (integer)
      "client_id": "orders-worker-3",     optional
      "host": "10.0.3.17",                optional
      "error": "ILLEGAL_GENERATION",      optional, Kafka error name (UPPER_SNAKE)
      "reason": "commit after revoke",    optional, free text
      "details": {"partition": "3"}       optional, flat map; numbers and booleans become strings
    }

Unknown fields are refused (extra="forbid") so a typo is not silently dropped; the agent bumps the version
instead. A record that is not valid is an unrecognised `json` outcome carrying the first validation error.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent, ParseOutcome

SCHEMA_V1 = "radar.event/1"
SCHEMA_PREFIX = "radar.event/"
SOURCE = TelemetrySource.JSON


class RadarEventV1(BaseModel):
    """`radar.event/1`: one heartbeat event as the agent reports it."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_id: Literal["radar.event/1"] = Field(alias="schema")
    event: HeartbeatEventKind
    ts: StrictInt = Field(ge=0)
    group_id: str = Field(min_length=1)
    member_id: str | None = None
    group_instance_id: str | None = None
    generation: StrictInt | None = None
    member_epoch: StrictInt | None = None
    client_id: str | None = None
    host: str | None = None
    error: str | None = Field(default=None, pattern=r"^[A-Z][A-Z0-9_]*$")
    reason: str | None = None
    details: dict[str, str] = Field(default_factory=dict)

    @field_validator("details", mode="before")
    @classmethod
    def scalar_details_as_text(cls, value: Any) -> Any:
        """Numbers and booleans in `details` become strings (the column is MAP<STRING, STRING>)."""
        if not isinstance(value, dict):
            return value
        converted: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(item, bool):
                converted[key] = "true" if item else "false"
            elif isinstance(item, int | float):
                converted[key] = str(item)
            else:
                converted[key] = item
        return converted

    def to_json_bytes(self) -> bytes:
        """The wire form emitters produce: compact JSON, `schema` by its name, absent optional fields left out."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()

    def as_event(self) -> HeartbeatEvent:
        return HeartbeatEvent(
            event_time=self.ts,
            group_id=self.group_id,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            generation=self.generation,
            member_epoch=self.member_epoch,
            event=self.event,
            error=self.error,
            reason=self.reason,
            client_id=self.client_id,
            host=self.host,
            source=SOURCE,
            details=dict(self.details),
        )


def is_radar_event(obj: dict[str, Any]) -> bool:
    """Whether a JSON object claims the project's schema (any version)."""
    schema = obj.get("schema")
    return isinstance(schema, str) and schema.startswith(SCHEMA_PREFIX)


def parse_radar_event(obj: dict[str, Any]) -> ParseOutcome:
    """A JSON object claiming `radar.event/*` -> one event, or unrecognised with the validation error."""
    if obj.get("schema") != SCHEMA_V1:
        return ParseOutcome.unrecognised(SOURCE, f"unsupported schema {obj.get('schema')!r}")
    try:
        model = RadarEventV1.model_validate(obj)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return ParseOutcome.unrecognised(SOURCE, f"invalid {SCHEMA_V1}: {where}: {first.get('msg')}")
    return ParseOutcome((model.as_event(),), SOURCE)
