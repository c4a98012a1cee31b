"""The demo's incident scripts (seed 001, "The Why"): each scenario a declared list of phases, each phase a list of
steps with their timings, played by one runner against real confluent-kafka members on the embedded broker.

Why declared and not coded: the live view shows the phases as progress, the report and the tests read which
detections each phase should produce (`Phase.expect`), and the timings that make the broker act (session
timeouts of 3 s for classic members, 6 s for KIP-848 groups, see conf/local.yml `broker`) stay in one place.

Scenarios: `incidents` (default: a healthy phase, a member stalled past its session, the zombie that wakes and
commits, a crash-looping member, a group stuck at one epoch), `healthy` (scale out, clean shutdown: nothing to
detect), `short` (the stalled member and its zombie commit only: the CI's end-to-end demo).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebalance_radar.pipelines.local.member import MEMBER_MODULE
from rebalance_radar.transforms.schemas import DetectionKind

WORK_TOPIC_PARTITIONS = 4
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class MemberSpec:
    """A member of the fleet: its name (also its client.id), its group key, protocol and extra member options."""

    name: str
    group: str
    protocol: str = "classic"
    agent: bool = False
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Start:
    """Start a member process; by default wait until it has its first assignment."""

    member: MemberSpec
    wait_assigned: bool = True


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Freeze:
    """SIGSTOP: the process (and its heartbeat thread) stops, as in a long GC pause or a frozen VM."""

    member: str


@dataclass(frozen=True)
class Thaw:
    """SIGCONT, then wait until the member prints `wait_for` (e.g. its refused commit)."""

    member: str
    wait_for: str | None = None


@dataclass(frozen=True)
class Kill:
    """SIGKILL: a crash, no LeaveGroup."""

    member: str


@dataclass(frozen=True)
class Leave:
    """SIGTERM: the member closes cleanly (LeaveGroup)."""

    member: str


@dataclass(frozen=True)
class WaitFor:
    """Wait until the member prints a line with `key` (after its last line with `after`, when given)."""

    member: str
    key: str
    after: str | None = None
    timeout_s: float = 30.0


Step = Start | Pause | Freeze | Thaw | Kill | Leave | WaitFor


@dataclass(frozen=True)
class Phase:
    """One act of a scenario: what a user would see happen, and the detections it should leave per group key."""

    name: str
    description: str
    steps: tuple[Step, ...]
    expect: tuple[tuple[str, DetectionKind], ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    groups: dict[str, str]  # group key -> protocol (classic | consumer)
    phases: tuple[Phase, ...]

    def expected(self) -> tuple[tuple[str, DetectionKind], ...]:
        return tuple(pair for phase in self.phases for pair in phase.expect)


# --- the fleet -----------------------------------------------------------------------------------------------------

CLASSIC_SESSION = ("--session-timeout-ms", "3000")
HEALTHY_CLASSIC = tuple(MemberSpec(f"orders-{i}", "orders", agent=True) for i in (1, 2, 3))
HEALTHY_KIP848 = tuple(MemberSpec(f"payments-{i}", "payments", protocol="consumer", agent=True) for i in (1, 2))
BILLING_A = MemberSpec("billing-a", "billing", agent=True, options=CLASSIC_SESSION)
BILLING_B = MemberSpec("billing-b", "billing", options=CLASSIC_SESSION)
SEARCH_STEADY = MemberSpec("search-steady", "search", options=CLASSIC_SESSION)
SEARCH_CRASHING = MemberSpec("crashing-worker", "search", options=CLASSIC_SESSION)
INVENTORY_STUCK = MemberSpec(
    "inventory-stuck", "inventory", protocol="consumer", agent=True,
    options=("--block-revoke-s", "14", "--max-poll-interval-ms", "8000"),
)  # fmt: skip
INVENTORY_NEW = MemberSpec("inventory-new", "inventory", protocol="consumer", agent=True)


def healthy_phase(classic: tuple[MemberSpec, ...], kip848: tuple[MemberSpec, ...]) -> Phase:
    steps: list[Step] = []
    for member in (*classic, *kip848):
        steps += [Start(member), Pause(1.0)]
    return Phase(
        "healthy",
        f"a classic group scales out to {len(classic)} members and a KIP-848 group to {len(kip848)}: planned "
        "rebalances, nothing to detect",
        (*steps, Pause(2.0)),
    )


def shutdown_phase(members: tuple[MemberSpec, ...], settle_s: float) -> Phase:
    """The healthy members leave cleanly, then the clock moves event time past every deadline."""
    steps: list[Step] = [Leave(m.name) for m in members]
    return Phase("wind-down", "the healthy members leave cleanly; the monitor catches up", (*steps, Pause(settle_s)))


STALLED = Phase(
    "heartbeat expiration",
    "billing-a freezes (SIGSTOP, like a long GC pause) past its 3 s session: the coordinator removes it",
    (Start(BILLING_A), Start(BILLING_B), Pause(2.0), Freeze(BILLING_A.name), Pause(6.0)),
    expect=(("billing", DetectionKind.HEARTBEAT_EXPIRATION),),
)
ZOMBIE = Phase(
    "zombie commit",
    "billing-a wakes up, still believes it owns its partitions and commits: the coordinator refuses",
    (
        Thaw(BILLING_A.name, wait_for="commit_error"),
        WaitFor(BILLING_A.name, "assigned", after="commit_error"),
        Pause(2.0),
    ),
    expect=(("billing", DetectionKind.ZOMBIE_COMMIT),),
)
CRASH_LOOP = Phase(
    "crash loop",
    "crashing-worker joins search and crashes (SIGKILL) three times: members bounce n / n+1",
    (
        Start(SEARCH_STEADY),
        *(Start(SEARCH_CRASHING), Pause(1.5), Kill(SEARCH_CRASHING.name), Pause(4.5)) * 3,
    ),
    expect=(("search", DetectionKind.MEMBERSHIP_FLAPPING),),
)
STUCK_EPOCH = Phase(
    "failing generation",
    "inventory-stuck (KIP-848) hangs in its revocation callback when inventory-new joins: the group cannot reach "
    "its new epoch until the coordinator fences it after its 8 s rebalance timeout",
    (
        Start(INVENTORY_STUCK),
        Pause(1.0),
        Start(INVENTORY_NEW, wait_assigned=False),
        WaitFor(INVENTORY_STUCK.name, "blocking_revoke"),
        Pause(12.0),
    ),
    expect=(("inventory", DetectionKind.FAILING_GENERATION),),
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "incidents",
            "seed 001's incidents one after another beside two healthy groups",
            {
                "orders": "classic",
                "payments": "consumer",
                "billing": "classic",
                "search": "classic",
                "inventory": "consumer",
            },
            (
                healthy_phase(HEALTHY_CLASSIC, HEALTHY_KIP848),
                STALLED,
                ZOMBIE,
                CRASH_LOOP,
                STUCK_EPOCH,
                shutdown_phase(HEALTHY_CLASSIC + HEALTHY_KIP848, settle_s=8.0),
            ),
        ),
        Scenario(
            "healthy",
            "two healthy groups scale out and shut down cleanly: a monitor that cries wolf here is wrong",
            {"orders": "classic", "payments": "consumer"},
            (healthy_phase(HEALTHY_CLASSIC, HEALTHY_KIP848), shutdown_phase(HEALTHY_CLASSIC + HEALTHY_KIP848, 6.0)),
        ),
        Scenario(
            "short",
            "one healthy group, one stalled member and its zombie commit (the CI's end-to-end demo)",
            {"orders": "classic", "billing": "classic"},
            (
                healthy_phase(HEALTHY_CLASSIC[:2], ()),
                STALLED,
                ZOMBIE,
                shutdown_phase(HEALTHY_CLASSIC[:2], settle_s=6.0),
            ),
        ),
    )
}


def scenario_named(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; choose one of: {', '.join(SCENARIOS)}.") from None


# --- the runner ----------------------------------------------------------------------------------------------------


class MemberProcess:
    """A running member: its JSON lines (read from its output file), signals, and a stop that always ends it."""

    def __init__(self, command: list[str], out: Path, env: Mapping[str, str] | None = None) -> None:
        """`env`: the member's whole environment (its credentials by variable name), or this process's."""
        self.out = out
        with out.open("w") as sink:
            self.process = subprocess.Popen(
                command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )

    def lines(self) -> list[dict[str, Any]]:
        found = []
        for line in self.out.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def wait_for(self, key: str, timeout_s: float = 60.0, after: int = 0) -> None:
        """Until the member printed `key` (after its `after` first lines). The bound only ends a failure: a member's
        interpreter start and first join are slow on a host loaded by a Spark run."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(key in line for line in self.lines()[after:]):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise ScenarioError(f"a demo member printed no {key!r} within {timeout_s:.0f} s; see {self.out}")

    def signal(self, number: int) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, number)

    def stop(self) -> None:
        """SIGCONT (a stopped process ignores SIGTERM), SIGTERM for a clean close, SIGKILL if it hangs."""
        if self.process.poll() is not None:
            return
        self.signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT_S)


class ScenarioError(RuntimeError):
    """A scenario step did not happen (a member did not join, did not fail its commit): the message says which."""


@dataclass
class ScenarioProgress:
    """Where the runner is, for the live view: the current phase and when each phase started and ended."""

    scenario: Scenario
    phase_index: int = -1
    started: dict[int, float] = field(default_factory=dict)
    ended: dict[int, float] = field(default_factory=dict)
    error: str | None = None
    done: bool = False

    @property
    def phase(self) -> Phase | None:
        phases = self.scenario.phases
        return phases[self.phase_index] if 0 <= self.phase_index < len(phases) else None


class ScenarioRunner:
    """Plays a scenario's steps against the broker at `bootstrap`, each group in its own group id and topic;
    `start()` runs it in a thread (the monitor runs meanwhile), `stop()` ends every member it started."""

    def __init__(self, scenario: Scenario, bootstrap: str, telemetry_topic: str, out_dir: Path, tag: str) -> None:
        self.scenario = scenario
        self.bootstrap = bootstrap
        self.telemetry_topic = telemetry_topic
        self.out_dir = out_dir
        self.tag = tag
        self.progress = ScenarioProgress(scenario)
        self.members: dict[str, MemberProcess] = {}
        self.all_members: list[MemberProcess] = []
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def group_id(self, key: str) -> str:
        return f"{key}-{self.tag}"

    def topic(self, key: str) -> str:
        return f"demo.{key}-{self.tag}"

    def create_topics(self) -> None:
        from rebalance_radar.pipelines.local.topics import create_topics

        for key in self.scenario.groups:
            create_topics(self.bootstrap, [self.topic(key)], partitions=WORK_TOPIC_PARTITIONS)

    def _command(self, member: MemberSpec) -> list[str]:
        command = [
            sys.executable, "-m", MEMBER_MODULE, "--bootstrap", self.bootstrap, "--topic", self.topic(member.group),
            "--group", self.group_id(member.group), "--protocol", member.protocol, "--client-id", member.name,
            *member.options,
        ]  # fmt: skip
        if member.agent:
            command += ["--agent-topic", self.telemetry_topic]
        return command

    def _member(self, name: str) -> MemberProcess:
        if name not in self.members:
            raise ScenarioError(f"scenario step names member {name!r} before starting it")
        return self.members[name]

    def _pause(self, seconds: float) -> None:
        if self._stopping.wait(seconds):
            raise ScenarioError("the demo was stopped")

    def play(self, step: Step) -> None:
        if isinstance(step, Start):
            self.out_dir.mkdir(parents=True, exist_ok=True)
            out = self.out_dir / f"{step.member.name}-{len(self.all_members)}.jsonl"
            started = MemberProcess(self._command(step.member), out)
            self.members[step.member.name] = started
            self.all_members.append(started)
            if step.wait_assigned:
                started.wait_for("assigned", 30.0)
        elif isinstance(step, Pause):
            self._pause(step.seconds)
        elif isinstance(step, Freeze):
            self._member(step.member).signal(signal.SIGSTOP)
        elif isinstance(step, Thaw):
            member = self._member(step.member)
            seen = len(member.lines())
            member.signal(signal.SIGCONT)
            if step.wait_for:
                member.wait_for(step.wait_for, 30.0, after=seen)
        elif isinstance(step, Kill):
            self._member(step.member).signal(signal.SIGKILL)
        elif isinstance(step, Leave):
            self._member(step.member).stop()
        elif isinstance(step, WaitFor):
            member = self._member(step.member)
            lines = member.lines()
            marks = [i for i, line in enumerate(lines) if step.after is not None and step.after in line]
            member.wait_for(step.key, step.timeout_s, after=marks[-1] + 1 if marks else 0)

    def run(self) -> None:
        """Every phase in order (blocking); failures are kept in `progress.error`, members stopped at the end."""
        try:
            self.create_topics()
            for index, phase in enumerate(self.scenario.phases):
                self.progress.phase_index = index
                self.progress.started[index] = time.monotonic()
                for step in phase.steps:
                    self.play(step)
                self.progress.ended[index] = time.monotonic()
        except Exception as error:  # the view shows it; the demo still writes what the monitor saw
            self.progress.error = str(error)
        finally:
            self.stop_members()
            self.progress.done = True

    def start(self) -> ScenarioRunner:
        self._thread = threading.Thread(target=self.run, name="radar-demo-scenario", daemon=True)
        self._thread.start()
        return self

    def join(self, timeout_s: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def stop_members(self) -> None:
        for member in self.all_members:
            member.stop()

    def stop(self) -> None:
        self._stopping.set()
        self.join(STOP_TIMEOUT_S * 2)
        self.stop_members()
