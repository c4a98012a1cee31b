"""A classic group member that sends JoinGroup and heartbeats but never SyncGroup, spoken through the project's
own wire client (no Kafka client library can be told to skip SyncGroup).

The coordinator completes each generation with it (the leader's sync persists the assignment), then removes it a
rebalance timeout later "on pending sync request expiration" and rebalances; the member rejoins under a new id
and the group loses generation after generation: a group that cannot settle.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from rebalance_radar.emitters.kafka_wire_client import KafkaWireClient
from rebalance_radar.transforms.wire.consumer_protocol import encode_subscription
from rebalance_radar.transforms.wire.error_codes import ErrorCode

JOIN_VERSION = 5  # member id required (v4+), group.instance.id (v5), not yet flexible
HEARTBEAT_VERSION = 3


@dataclass
class UnsyncedMember:
    """Joins `cycles` times (each time it is removed); `joined` lists (generation, member id) per join."""

    bootstrap: str
    group: str
    topic: str
    cycles: int
    client_id: str = "unsynced-member"
    session_timeout_ms: int = 6000
    rebalance_timeout_ms: int = 3000
    heartbeat_interval_s: float = 1.0  # well within the session: only the missing SyncGroup gets it removed
    joined: list[tuple[int, str]] = field(default_factory=list)
    removed: int = 0
    failure: BaseException | None = None
    _thread: threading.Thread | None = None

    def start(self) -> UnsyncedMember:
        self._thread = threading.Thread(target=self._run, name=f"unsynced-{self.group}", daemon=True)
        self._thread.start()
        return self

    def join(self, timeout_s: float) -> None:
        assert self._thread is not None
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), f"the unsynced member of {self.group} did not finish in {timeout_s} s"
        if self.failure is not None:
            raise AssertionError(f"the unsynced member of {self.group} failed: {self.failure}") from self.failure

    def _run(self) -> None:
        try:
            with KafkaWireClient.from_bootstrap(self.bootstrap, client_id=self.client_id, timeout_s=60) as client:
                while self.removed < self.cycles:
                    generation, member_id = self._join(client)
                    self.joined.append((generation, member_id))
                    self._heartbeat_until_removed(client, generation, member_id)
                    self.removed += 1
        except BaseException as failure:  # reported by join(): a thread's exception is otherwise lost
            self.failure = failure

    def _join(self, client: KafkaWireClient) -> tuple[int, str]:
        body = {
            "groupId": self.group,
            "sessionTimeoutMs": self.session_timeout_ms,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "memberId": "",
            "groupInstanceId": None,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": encode_subscription(0, {"topics": [self.topic]})}],
        }
        for _ in range(10):
            answer = client.request("JoinGroup", JOIN_VERSION, body)
            error = answer.get("errorCode") or 0
            if error == ErrorCode.MEMBER_ID_REQUIRED.value:
                body["memberId"] = answer["memberId"]
                continue
            if error == 0:
                return answer["generationId"], answer["memberId"]
            body["memberId"] = ""
            time.sleep(0.5)  # a retry's pause (the group was busy), not a wait for something
        raise AssertionError(f"JoinGroup into {self.group} kept failing: {answer}")

    def _heartbeat_until_removed(self, client: KafkaWireClient, generation: int, member_id: str) -> None:
        """Heartbeats keep the session alive, so only the missing SyncGroup can get it removed."""
        while True:
            time.sleep(self.heartbeat_interval_s)  # kept: the scenario's heartbeat pace, not a wait
            answer = client.request(
                "Heartbeat",
                HEARTBEAT_VERSION,
                {"groupId": self.group, "generationId": generation, "memberId": member_id, "groupInstanceId": None},
            )
            if answer.get("errorCode"):
                return
