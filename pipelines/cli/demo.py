"""`radar demo`: the embedded default. The embedded broker, the monitor's live stages (ingest + detection + the
clock, as in `radar run`, in-process) and a fleet of real confluent-kafka consumers playing an incident scenario
(`pipelines.local.scenarios`); a live terminal view of the phases and of the detections as the gold tables get
them; then the HTML report (`pipelines.cli.report`).

Why a command and not a notebook: a newcomer's first minutes decide whether the monitor is believed. Every part
is the production one; only the consumers' misbehaviour is scripted.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.local.scenarios import Scenario, ScenarioProgress, ScenarioRunner, scenario_named
from rebalance_radar.pipelines.runtime.console import PlainTicker, output_console, print_line
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, DetectionStatus

DEMO_MARKER = ".radar-demo"
"""A data dir the demo made holds this file: only such a dir is cleared when the demo starts again."""
VIEW_REFRESH_S = 3.0
CATCH_UP_S = 45.0
"""After the script: how long the monitor may take to show every expected detection before the demo ends."""
SHOWN_DETECTIONS = 12
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


@dataclass(frozen=True)
class DemoResult:
    """What a demo run saw: the detections (gold rows), the expected (group, kind) pairs it did not see, timings."""

    scenario: str
    data_dir: Path
    report: Path | None
    groups: dict[str, str]  # group key -> group id
    detections: tuple[dict[str, Any], ...]
    missing: tuple[tuple[str, str], ...]
    wall_s: float
    first_detection_s: float | None
    scenario_error: str | None
    alerts: tuple[tuple[str, str | None], ...] = ()  # (rule, group id) of the alerts open after the final checks


def prepare_data_dir(data_dir: Path) -> None:
    """Start from an empty data dir: a previous demo's (it carries the marker) is cleared; a dir with anything
    else in it is refused, so the demo never mixes with or deletes a real run's tables."""
    if data_dir.exists() and any(data_dir.iterdir()):
        if not (data_dir / DEMO_MARKER).is_file():
            raise ConfigError(
                f"{data_dir} holds data that radar demo did not write; pass --data-dir with an empty or new folder."
            )
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / DEMO_MARKER).write_text("written by radar demo; cleared by the next radar demo over this dir\n")


def read_detections(spark: SparkSession, config: RadarConfig) -> list[dict[str, Any]]:
    """The detections written so far (none while the table does not exist yet)."""
    location = TableCatalog(config).location(DETECTIONS)
    if location is None or not (location / "_delta_log").is_dir():
        return []
    frame = spark.read.format("delta").load(str(location))
    return [row.asDict() for row in frame.where(frame["cluster"] == config.cluster).collect()]


class DetectionBatches:
    """Tells when the detection query finished a micro-batch since the last look (only then can the gold
    detections have changed)."""

    def __init__(self, queries: Iterable[StreamingQuery]) -> None:
        self.queries = tuple(queries)
        self.seen: dict[str, int] = {}

    def newest(self, query: StreamingQuery) -> int:
        """The newest micro-batch of `query` seen by `advanced` (-1 before any)."""
        return self.seen.get(query.name, -1)

    def advanced(self) -> bool:
        moved = False
        for query in self.queries:
            progress = query.lastProgress
            batch = int(progress.batchId) if progress is not None else -1
            if batch > self.seen.get(query.name, -1):
                self.seen[query.name] = batch
                moved = True
        return moved


class Confirmation:
    """Tells when the expected detections are all shown and the watermark has had time to confirm them: a live
    detection is first `provisional`, and the demo should not end (and report) before the watermark passes it, nor
    while any other detection of its groups is still provisional (a preview the ordered events may withdraw).

    From the moment none is missing, the clock's ticks carry event time `lateness_s` past every deciding record;
    then the detection micro-batch in flight may predate that tick, the next one reads it (and moves the watermark),
    and the one after decides with it: `BATCHES` micro-batches finished after that moment."""

    BATCHES = 3

    def __init__(self, lateness_s: float) -> None:
        self.lateness_s = lateness_s
        self.all_seen_at: float | None = None
        self.from_batch: int | None = None

    def done(self, view: DemoView, batch: int) -> bool:
        """`batch`: the detection query's newest finished micro-batch (`DetectionBatches.newest`)."""
        if view.missing() or view.unconfirmed():
            return False
        now = time.monotonic()
        self.all_seen_at = self.all_seen_at or now
        if self.from_batch is None:
            if now - self.all_seen_at < self.lateness_s:
                return False
            self.from_batch = batch
        return batch >= self.from_batch + self.BATCHES


class DemoView:
    """The live terminal view: the script's phases with their progress, the expected detections ticked off as
    they appear, and the newest detections."""

    def __init__(self, progress: ScenarioProgress, groups: dict[str, str], started: float) -> None:
        self.progress = progress
        self.groups = groups
        self.started = started
        self.detections: list[dict[str, Any]] = []
        self.first_detection_s: float | None = None
        self.alerts_line = "alerts: the checks run when the script ends"
        self.monitor = "starting"

    def __rich__(self) -> Group:
        return self.render()

    @property
    def scenario(self) -> Scenario:
        return self.progress.scenario

    def seen(self) -> set[tuple[str, str]]:
        # a provisional detection counts (it is what a live run shows first); a withdrawn one does not
        return {(d["group_id"], d["kind"]) for d in self.detections if d.get("status") != DetectionStatus.WITHDRAWN}

    def missing(self) -> list[tuple[str, str]]:
        seen = self.seen()
        return [
            (self.groups[k], str(kind)) for k, kind in self.scenario.expected() if (self.groups[k], kind) not in seen
        ]

    def unconfirmed(self) -> list[tuple[str, str]]:
        """Detections of the demo's groups still provisional: the watermark has yet to confirm or withdraw them."""
        ours = set(self.groups.values())
        return [
            (d["group_id"], d["kind"])
            for d in self.detections
            if d.get("status") == DetectionStatus.PROVISIONAL and d["group_id"] in ours
        ]

    def update(self, detections: list[dict[str, Any]]) -> None:
        self.detections = detections
        if detections and self.first_detection_s is None:
            self.first_detection_s = time.monotonic() - self.started

    def status_text(self) -> str:
        """The view's last line: time, the monitor's state, the detections so far, the alerts."""
        first = f"{self.first_detection_s:.0f} s" if self.first_detection_s is not None else "-"
        phase = self.progress.phase
        playing = f"phase {phase.name}; " if phase is not None and not self.progress.done else ""
        return (
            f"{time.monotonic() - self.started:.0f} s elapsed; {playing}{self.monitor}; {len(self.detections)} "
            f"detection(s), first after {first}; {self.alerts_line}"
        )

    def render(self) -> Group:
        now = time.monotonic()
        phases = Table(title=f"radar demo: scenario {self.scenario.name}", expand=False, title_justify="left")
        for name in ("", "phase", "what happens", "time", "expected detections"):
            phases.add_column(name, overflow="fold")
        seen = self.seen()
        for index, phase in enumerate(self.scenario.phases):
            if index in self.progress.ended:
                mark, spent = "[green]✓[/]", self.progress.ended[index] - self.progress.started[index]
            elif index in self.progress.started:
                mark, spent = "[bold yellow]▶[/]", now - self.progress.started[index]
            else:
                mark, spent = "·", None
            expected = ", ".join(
                ("[green]✓ " if (self.groups[k], kind) in seen else "[dim]… ") + f"{kind} in {k}[/]"
                for k, kind in phase.expect
            )
            phases.add_row(
                mark, phase.name, phase.description, f"{spent:.0f} s" if spent is not None else "", expected or "-"
            )
        found = Table(title="detections (newest first)", expand=False, title_justify="left")
        for name in ("detected", "severity", "kind", "group", "status", "summary"):
            found.add_column(name, overflow="fold", no_wrap=name in ("detected", "severity"))
        newest = sorted(self.detections, key=lambda d: d.get("detected_at") or datetime.min, reverse=True)
        for d in newest[:SHOWN_DETECTIONS]:
            stamp = d["detected_at"].strftime("%H:%M:%S") if d.get("detected_at") else ""
            ended = d.get("status") in (DetectionStatus.RESOLVED, DetectionStatus.WITHDRAWN)
            style = "dim" if ended else SEVERITY_STYLE.get(str(d.get("severity")), "")
            found.add_row(
                stamp, d["severity"], d["kind"], d["group_id"], d["status"], d.get("summary") or "", style=style
            )
        status = Text(self.status_text())
        if self.progress.error:
            status.append(f"\nthe script stopped early: {self.progress.error}", style="bold red")
        return Group(phases, found if self.detections else Text("no detections yet", style="dim"), status)


class PlainDemoDisplay:
    """The demo on a pipe (`| tee`, a CI log): each phase and each new detection as a line when it happens, and the
    status line every `console.PLAIN_STATUS_EVERY_S` (while Spark starts too); no redrawing, no escape codes."""

    def __init__(self, view: DemoView, console: Console) -> None:
        self.view = view
        self.console = console
        self.ticker = PlainTicker("radar demo", view.status_text, stream=console.file)
        self._phases_said: set[tuple[int, str]] = set()
        self._detections_said: set[tuple[str, str]] = set()

    def __enter__(self) -> PlainDemoDisplay:
        print_line(
            self.console, f"radar demo: scenario {self.view.scenario.name}, {len(self.view.scenario.phases)} phases"
        )
        self.ticker.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ticker.__exit__(*exc)
        self.show_news()

    def show_news(self) -> None:
        progress = self.view.progress
        for index, phase in enumerate(self.view.scenario.phases):
            for moment, times in (("started", progress.started), ("ended", progress.ended)):
                if index in times and (index, moment) not in self._phases_said:
                    self._phases_said.add((index, moment))
                    what = f": {phase.description}" if moment == "started" else ""
                    print_line(self.console, f"radar demo: phase {phase.name} {moment}{what}")
        for d in sorted(self.view.detections, key=lambda d: d.get("detected_at") or datetime.min):
            key = (str(d.get("detection_id")), str(d.get("status")))
            if key not in self._detections_said:
                self._detections_said.add(key)
                stamp = d["detected_at"].strftime("%H:%M:%S") if d.get("detected_at") else "--:--:--"
                print_line(
                    self.console,
                    f"radar demo: detection {stamp} {d['severity']} {d['kind']} in {d['group_id']} ({d['status']}): "
                    f"{d.get('summary') or ''}",
                )


class LiveDemoDisplay:
    """The demo on a terminal: the view redrawn in place (rich)."""

    def __init__(self, view: DemoView, console: Console) -> None:
        self.live = Live(view, console=console, refresh_per_second=2, transient=False)

    def __enter__(self) -> LiveDemoDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)  # type: ignore[arg-type]

    def show_news(self) -> None:
        """Nothing to do: the live view shows everything on its next redraw."""


def demo_display(view: DemoView, console: Console) -> PlainDemoDisplay | LiveDemoDisplay:
    """The live view on a terminal, plain lines on a pipe."""
    return LiveDemoDisplay(view, console) if console.is_terminal else PlainDemoDisplay(view, console)


def run_demo(
    config: RadarConfig,
    scenario_name: str = "incidents",
    report: Path | None = None,
    *,
    broker: Any = None,
    spark: SparkSession | None = None,
    console: Console | None = None,
    catch_up_s: float = CATCH_UP_S,
) -> DemoResult:
    """The demo over `config.data_dir`: broker (the given one, else an embedded one of its own), topics, the
    monitor's stages, the scenario, the live view until the script ends and its detections appear (or
    `catch_up_s` passed), then the report at `report`."""
    from rebalance_radar.emitters.kafka_settings import client_settings
    from rebalance_radar.emitters.log_shipper import start_shipper
    from rebalance_radar.pipelines.cli.report import write_report
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka
    from rebalance_radar.pipelines.local.topics import create_topics, ensure_offsets_topic
    from rebalance_radar.pipelines.runtime.session import build_spark_session
    from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
    from rebalance_radar.pipelines.stages.detect import DetectStage, KafkaDetectorSources
    from rebalance_radar.pipelines.stages.ingest import IngestStage, kafka_checkpoint_name
    from rebalance_radar.pipelines.stages.sources import kafka_cluster_id, kafka_stream
    from rebalance_radar.pipelines.stages.streams import start_stages, stop_stages

    scenario = scenario_named(scenario_name)
    if not config.kafka.telemetry_topics:
        raise ConfigError("kafka.telemetry_topics is empty: the demo's agents and clock need a telemetry topic.")
    console = console or output_console(sys.stderr)
    started = time.monotonic()
    telemetry = config.kafka.telemetry_topics[0]
    with ExitStack() as stack:
        if broker is None:
            broker = stack.enter_context(EmbeddedKafka(config.broker, config.data_dir, spark=config.spark))
            from_start = True
        else:
            # A shared broker's logs hold other groups' history: ship its log, and read its topics, from now on (a
            # moment rather than `latest`, which Spark resolves only once its first batch runs, after the script
            # has started).
            from_start = False
            now = datetime.now(UTC)
            config = config.model_copy(update={"kafka": config.kafka.model_copy(update={"starting_offsets": now})})
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, config.kafka.telemetry_topics)
        stack.callback(start_shipper(broker.log_file, bootstrap, telemetry, from_start=from_start).stop)
        ensure_offsets_topic(bootstrap, config.kafka.offsets_topic)
        clock = ClockTickEmitter(client_settings(bootstrap), telemetry, interval_ms=config.detect.tick_interval_ms)
        stack.enter_context(clock)  # entered before the stages: stopped after their last micro-batch
        # The script starts with the broker, while Spark starts: the stages read both topics from the earliest
        # offset, so nothing is missed, and the demo is half a minute shorter.
        runner = ScenarioRunner(scenario, bootstrap, telemetry, config.data_dir / "demo-members", uuid.uuid4().hex[:6])
        groups = {key: runner.group_id(key) for key in scenario.groups}
        stack.callback(runner.stop)
        runner.start()
        view = DemoView(runner.progress, groups, started)
        script_done_at: float | None = None
        # the view redraws itself (rich's refresh thread, or the plain status lines) while Spark starts, so the
        # script's progress shows
        with demo_display(view, console) as display:
            view.monitor = f"starting Spark and the monitor's stages (data dir {config.data_dir})"
            spark = spark or build_spark_session(config)
            source = kafka_stream(spark, config, [config.kafka.offsets_topic], bootstrap)
            telemetry_source = kafka_stream(spark, config, list(config.kafka.telemetry_topics), bootstrap)
            checkpoint = kafka_checkpoint_name(config, kafka_cluster_id(spark, config, bootstrap))
            ingest = IngestStage(
                spark, config, source, telemetry_source=telemetry_source, checkpoint_name=checkpoint, from_kafka=True
            )
            detect = DetectStage(
                spark,
                config,
                checkpoint_name=checkpoint,
                kafka=KafkaDetectorSources(source, telemetry_source),
                cluster=client_settings(bootstrap),
            )
            stages = [ingest, detect]
            queries = start_stages(stack, stages)
            view.monitor = "monitor running: ingest + detection, a clock tick every second"
            detection_batches = DetectionBatches([detect.detection_query])
            confirmation = Confirmation(config.detect.lateness_ms / 1000)
            while True:
                queries.raise_failures()
                if detection_batches.advanced():  # a Delta read is a Spark job: only after a new detection batch
                    view.update(read_detections(spark, config))
                display.show_news()
                # the catch-up time counts once the script is over and every query has finished a micro-batch
                # (on a loaded machine Spark's first batches can take longer than the whole script)
                if runner.progress.done and script_done_at is None and all(q.lastProgress is not None for q in queries):
                    script_done_at = time.monotonic()
                    view.monitor = "script done: waiting for the monitor to catch up"
                if script_done_at is not None and (
                    confirmation.done(view, detection_batches.newest(detect.detection_query))
                    or time.monotonic() - script_done_at >= catch_up_s
                ):
                    break
                time.sleep(VIEW_REFRESH_S)
        stop_stages(stages)  # the detections read and checked below are then the drained, confirmed ones
        detections = tuple(read_detections(spark, config))
        view.update(list(detections))
        display.show_news()
        missing = tuple(view.missing())
        # The expectations run once over the final tables (a check run costs tens of seconds of Spark jobs on two
        # cores, so not during the script): their failures become `alerts` rows, which the report shows.
        from rebalance_radar.pipelines.checks.check import run_checks

        check = run_checks(spark, config)
        print_line(console, f"radar demo: checks: {check.summary_line()}")
        alerts = tuple(sorted({(a.rule, a.group_id) for a in (*check.opened, *check.updated)}, key=str))
    out = None
    if report is not None:
        write_report(spark, config, report, title=f"rebalance-radar demo: scenario {scenario.name}")
        out = report
    return DemoResult(
        scenario=scenario.name,
        data_dir=config.data_dir,
        report=out,
        groups=groups,
        detections=detections,
        missing=missing,
        wall_s=time.monotonic() - started,
        first_detection_s=view.first_detection_s,
        scenario_error=runner.progress.error,
        alerts=alerts,
    )


def print_demo_result(result: DemoResult, console: Console) -> None:
    """The closing lines: what was found, what was expected and not found, where to look next."""
    kinds = sorted({(d["group_id"], d["kind"]) for d in result.detections})
    console.print(
        f"radar demo: scenario {result.scenario} in {result.wall_s:.0f} s; {len(result.detections)} detection(s)"
        + (f", the first {result.first_detection_s:.0f} s after the start" if result.first_detection_s else "")
    )
    for group, kind in kinds:
        console.print(f"  - {kind} in {group}")
    for group, kind in result.missing:
        console.print(f"  [bold red]expected and not seen[/]: {kind} in {group}")
    if result.scenario_error:
        console.print(f"  [bold red]the script stopped early[/]: {result.scenario_error}")
    if result.report is not None:
        console.print(f"radar demo: report written to {result.report} (open it in a browser; it works offline)")
    # each suggested command on a line of its own, never wrapped: it must paste as it is
    print_line(console, "radar demo: next:")
    for command in next_commands(result.data_dir):
        print_line(console, f"  {command}")


def next_commands(data_dir: Path) -> list[str]:
    """What to run after the demo, over its data dir."""
    quoted = shlex.quote(str(data_dir))
    return [
        f"radar detections --data-dir {quoted}",
        f"radar watch --data-dir {quoted}",
        f'radar sql "SELECT group_id, generation, cause, duration_ms FROM rebalances ORDER BY '
        f'started_at" --data-dir {quoted}',
    ]
