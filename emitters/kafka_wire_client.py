"""A minimal blocking Kafka protocol client on the project's own codec (`transforms.wire`).

Why: confluent-kafka / librdkafka cannot send StreamsGroupDescribe or StreamsGroupHeartbeat (KIP-1071), so
`radar poll-groups` describes Kafka Streams groups through this client, and tests create a real streams group
without a Java Kafka Streams application. PLAINTEXT only: no TLS, no SASL.

One connection per client, one request in flight: int32 size framing, request header v1 (v2 for flexible
versions), a correlation id per request that the response must echo, the response decoded with
`frames.decode_response`. Versions are chosen from the broker's ApiVersions answer (sent once, v0, with
the codec's own ApiVersions definition).
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rebalance_radar.transforms.wire.error_codes import ErrorCode as E
from rebalance_radar.transforms.wire.error_codes import error_name
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.frames import APIS_BY_NAME, Api, decode_response, request_header_version
from rebalance_radar.transforms.wire.messages import REQUEST_HEADER
from rebalance_radar.transforms.wire.writer import write_message

MAX_RESPONSE_BYTES = 100 * 1024 * 1024
DEFAULT_CLIENT_ID = "radar-wire-client"
# Errors worth another FindCoordinator round: the coordinator is loading, moving, or not yet elected.
RETRIABLE_COORDINATOR_ERRORS = frozenset(
    {E.COORDINATOR_LOAD_IN_PROGRESS.name, E.COORDINATOR_NOT_AVAILABLE.name, E.NOT_COORDINATOR.name}
)


class KafkaWireError(RuntimeError):
    """Anything this client could not do: connect, frame, decode, or a broker-side error code."""


class KafkaConnectionError(KafkaWireError):
    """The broker could not be reached, or the connection broke or timed out mid-request."""


class KafkaBrokerError(KafkaWireError):
    """The broker answered with an error code; `error` is Kafka's name for it (e.g. NOT_COORDINATOR)."""

    def __init__(self, api: str, error: str, message: str | None = None, *, subject: str | None = None) -> None:
        self.api, self.error, self.detail, self.subject = api, error, message, subject
        where = f" for {subject}" if subject else ""
        super().__init__(f"{api}{where}: {error}" + (f" ({message})" if message else ""))


class UnsupportedVersionError(KafkaWireError):
    """Neither side has a version of the API in common (e.g. a broker without KIP-1071)."""


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """A broker as FindCoordinator names it."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """One ListGroups entry (state and type are empty on brokers too old to send them)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str


def parse_bootstrap(bootstrap_servers: str) -> list[tuple[str, int]]:
    """'h1:9092,h2:9092' (optionally PLAINTEXT://h1:9092) -> [(host, port), ...]."""
    addresses = []
    for entry in bootstrap_servers.split(","):
        entry = entry.strip().rsplit("://", 1)[-1]
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit():
            raise KafkaWireError(f"bootstrap address {entry!r} is not host:port")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise KafkaWireError(f"no bootstrap address in {bootstrap_servers!r}")
    return addresses


class KafkaWireClient:
    """One blocking connection to one broker; `connect` lazily, `close` (or use as a context manager)."""

    def __init__(self, host: str, port: int, *, client_id: str = DEFAULT_CLIENT_ID, timeout_s: float = 10.0) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._socket: socket.socket | None = None
        self._correlation_ids: Iterator[int] = itertools.count(1)
        self._api_versions: dict[int, tuple[int, int]] | None = None

    @classmethod
    def from_bootstrap(
        cls, bootstrap_servers: str, *, client_id: str = DEFAULT_CLIENT_ID, timeout_s: float = 10.0
    ) -> KafkaWireClient:
        """A connected client to the first reachable bootstrap address."""
        failures = []
        for host, port in parse_bootstrap(bootstrap_servers):
            client = cls(host, port, client_id=client_id, timeout_s=timeout_s)
            try:
                client.connect()
                return client
            except KafkaConnectionError as failure:
                failures.append(str(failure))
        raise KafkaConnectionError("no bootstrap broker reachable: " + "; ".join(failures))

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # --- connection and framing ------------------------------------------------------------------------------

    def connect(self) -> None:
        if self._socket is not None:
            return
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as failure:
            raise KafkaConnectionError(
                f"cannot connect to Kafka broker {self.address} within {self.timeout_s:g}s: {failure}"
            ) from failure
        sock.settimeout(self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket = sock

    def close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.close()
            finally:
                self._socket = None

    def __enter__(self) -> KafkaWireClient:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _exchange(self, request: bytes, what: str) -> bytes:
        """Send one size-prefixed request, read one size-prefixed response (without its size)."""
        self.connect()
        assert self._socket is not None
        try:
            self._socket.sendall(struct.pack(">i", len(request)) + request)
            (size,) = struct.unpack(">i", self._recv_exact(4, what))
            if size < 0 or size > MAX_RESPONSE_BYTES:
                raise KafkaWireError(f"{what} from {self.address}: implausible response size {size}")
            return self._recv_exact(size, what)
        except (TimeoutError, OSError) as failure:
            self.close()  # the stream position is unknown now; a later request starts a new connection
            raise KafkaConnectionError(f"{what} to {self.address} failed: {failure or type(failure).__name__}") from (
                failure
            )
        except KafkaWireError:
            self.close()
            raise

    def _recv_exact(self, count: int, what: str) -> bytes:
        assert self._socket is not None
        chunks, remaining = [], count
        while remaining:
            chunk = self._socket.recv(min(remaining, 1 << 20))
            if not chunk:
                raise KafkaConnectionError(f"{what}: {self.address} closed the connection")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    # --- versions ----------------------------------------------------------------------------------------------

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The broker's supported version range per API key (ApiVersions v0, asked once per client)."""
        if self._api_versions is None:
            body = self.request("ApiVersions", 0, {})
            error = error_name(body.get("errorCode"))
            if error is not None:
                raise KafkaBrokerError("ApiVersions", error)
            self._api_versions = {k["apiKey"]: (k["minVersion"], k["maxVersion"]) for k in body.get("apiKeys") or []}
        return self._api_versions

    def version_for(self, api_name: str, *, low: int = 0, high: int | None = None) -> int:
        """The highest version both the broker and the codec support, within [low, high]."""
        api = APIS_BY_NAME[api_name]
        broker = self.api_versions().get(api.key)
        if broker is None:
            raise UnsupportedVersionError(f"broker {self.address} does not support {api_name} (API key {api.key})")
        top = min(broker[1], api.request.valid.high, api.response.valid.high, high if high is not None else 1 << 15)
        bottom = max(broker[0], api.request.valid.low, low)
        if top < bottom:
            raise UnsupportedVersionError(
                f"{api_name}: broker {self.address} supports v{broker[0]}-{broker[1]}, this client v{bottom}-{top}"
            )
        return top

    # --- requests ----------------------------------------------------------------------------------------------

    def request(self, api_name: str, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request at `version`; the decoded response body (camelCase, as Kafka's JSON names it)."""
        api: Api = APIS_BY_NAME[api_name]
        correlation_id = next(self._correlation_ids)
        header = write_message(
            REQUEST_HEADER,
            request_header_version(api, version),
            {
                "requestApiKey": api.key,
                "requestApiVersion": version,
                "correlationId": correlation_id,
                "clientId": self.client_id,
            },
        )
        data = self._exchange(header + write_message(api.request, version, dict(body)), f"{api_name} v{version}")
        try:
            frame = decode_response(data, api.key, version, sized=False)
        except DecodeError as failure:
            raise KafkaWireError(f"{api_name} v{version} response from {self.address}: {failure}") from failure
        echoed = (frame.header or {}).get("correlationId")
        if echoed != correlation_id:
            self.close()
            raise KafkaWireError(f"{api_name}: correlation id {echoed} answers no request ({correlation_id})")
        return frame.body or {}

    def find_coordinator(self, group_id: str) -> BrokerAddress:
        """The group's coordinator (FindCoordinator v4+ with `coordinatorKeys`, else v3 with `key`)."""
        version = self.version_for("FindCoordinator", high=6)
        if version >= 4:
            body = self.request("FindCoordinator", version, {"keyType": 0, "coordinatorKeys": [group_id]})
            entries = [c for c in body.get("coordinators") or [] if c.get("key") == group_id]
            if not entries:
                raise KafkaWireError(f"FindCoordinator v{version}: no entry for group {group_id!r}")
            found = entries[0]
        else:
            found = self.request("FindCoordinator", version, {"key": group_id, "keyType": 0})
        error = error_name(found.get("errorCode"))
        if error:
            raise KafkaBrokerError("FindCoordinator", error, found.get("errorMessage"), subject=f"group {group_id!r}")
        return BrokerAddress(int(found["nodeId"]), str(found["host"]), int(found["port"]))

    def list_groups(self, types: Sequence[str] = ("streams",), states: Sequence[str] = ()) -> list[ListedGroup]:
        """Groups this broker coordinates, filtered by type (ListGroups v5) and state (v4+); one broker only."""
        version = self.version_for("ListGroups", low=5 if types else 0)
        body = self.request("ListGroups", version, {"statesFilter": list(states), "typesFilter": list(types)})
        error = error_name(body.get("errorCode"))
        if error:
            raise KafkaBrokerError("ListGroups", error, subject=self.address)
        return [
            ListedGroup(
                str(g.get("groupId")),
                str(g.get("protocolType") or ""),
                str(g.get("groupState") or ""),
                str(g.get("groupType") or ""),
            )
            for g in body.get("groups") or []
        ]

    def describe_streams_groups(
        self, group_ids: Iterable[str], *, include_authorized_operations: bool = False
    ) -> list[dict[str, Any]]:
        """StreamsGroupDescribe on this broker: one `DescribedGroup` per id, each with its own `errorCode`
        (send it to the groups' coordinator, or they answer NOT_COORDINATOR)."""
        version = self.version_for("StreamsGroupDescribe")
        body = self.request(
            "StreamsGroupDescribe",
            version,
            {"groupIds": list(group_ids), "includeAuthorizedOperations": include_authorized_operations},
        )
        return list(body.get("groups") or [])

    def streams_group_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        *,
        topology: Mapping[str, Any] | None = None,
        process_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        active_tasks: Sequence[Mapping[str, Any]] | None = None,
        standby_tasks: Sequence[Mapping[str, Any]] | None = None,
        warmup_tasks: Sequence[Mapping[str, Any]] | None = None,
        endpoint_information_epoch: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One StreamsGroupHeartbeat; the raw response (its `errorCode` is the caller's to judge: joining a
        streams group is a dialogue of topology and epoch errors). Joining (epoch 0) needs a `topology`."""
        version = self.version_for("StreamsGroupHeartbeat")
        body: dict[str, Any] = {
            "groupId": group_id,
            "memberId": member_id,
            "memberEpoch": member_epoch,
            "endpointInformationEpoch": endpoint_information_epoch,
            "rebalanceTimeoutMs": rebalance_timeout_ms,
            "topology": dict(topology) if topology is not None else None,
            "activeTasks": None if active_tasks is None else [dict(t) for t in active_tasks],
            "standbyTasks": None if standby_tasks is None else [dict(t) for t in standby_tasks],
            "warmupTasks": None if warmup_tasks is None else [dict(t) for t in warmup_tasks],
            "processId": process_id,
            **(extra or {}),
        }
        return self.request("StreamsGroupHeartbeat", version, body)


def coordinator_client(
    bootstrap: KafkaWireClient, group_id: str, *, attempts: int = 5, backoff_s: float = 0.5
) -> KafkaWireClient:
    """A new client connected to `group_id`'s coordinator (FindCoordinator retried while it is moving/loading)."""
    for attempt in range(attempts):
        try:
            found = bootstrap.find_coordinator(group_id)
        except KafkaBrokerError as failure:
            if failure.error not in RETRIABLE_COORDINATOR_ERRORS or attempt == attempts - 1:
                raise
            time.sleep(backoff_s)
            continue
        client = KafkaWireClient(found.host, found.port, client_id=bootstrap.client_id, timeout_s=bootstrap.timeout_s)
        client.connect()
        return client
    raise AssertionError("unreachable")
