"""Typed configuration: one YAML per environment (conf/<env>.yml) plus RADAR__* environment overrides.

Secrets never live in these files: the security section holds only the *names* of environment variables or
Databricks secret-scope keys, and `emitters.kafka_settings.client_settings`, the one builder of Kafka client settings,
reads the values at run time (it lives with the emitters, which must not import pipelines).
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin

import yaml
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from rebalance_radar.emitters.kafka_settings import (
    ClientSettings,
    ConfigError,
    SecretLookup,
    SecurityConfig,
    client_settings,
)
from rebalance_radar.expectations.rules import RuleName
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds

ENV_PREFIX = "RADAR__"
ENV_SEPARATOR = "__"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONF_PATH = Path("conf/local.yml")


_TRIGGER_INTERVAL = re.compile(
    r"\s*\d+(\.\d+)?\s*(microsecond|millisecond|second|minute|hour|day|week)s?\s*", re.IGNORECASE
)


def _trigger_interval(text: str) -> str:
    """A processing-time trigger as Spark reads it ("1 second", "500 milliseconds"), checked at load: Spark would
    refuse a typo only when the query starts."""
    if not _TRIGGER_INTERVAL.fullmatch(text):
        raise ValueError('expected a number and a unit: "500 milliseconds", "1 second", "10 seconds", "1 minute"')
    return text


TriggerInterval = Annotated[str, AfterValidator(_trigger_interval)]


class FrozenSection(BaseModel):
    """Base for every section: immutable, and unknown keys are errors (a typo must not be ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _comma_separated_lists(cls, values: Any) -> Any:
        """A list given as one string is comma-separated (`RADAR__KAFKA__TELEMETRY_TOPICS=a,b`): an environment
        value is read as YAML, and YAML reads `a,b` as one string."""
        if not isinstance(values, dict):
            return values
        split = dict(values)
        for name, field in cls.model_fields.items():
            key = field.alias if field.alias in split else name
            value = split.get(key)
            if isinstance(value, str) and get_origin(field.annotation) in (tuple, list):
                split[key] = [part.strip() for part in value.split(",") if part.strip()]
        return split


class KafkaConfig(FrozenSection):
    """Where the records come from; an empty bootstrap_servers means: start the embedded broker."""

    bootstrap_servers: str | None = None
    offsets_topic: str = "__consumer_offsets"
    telemetry_topics: tuple[str, ...] = ("radar.telemetry",)
    # Where a new checkpoint starts reading: the topics' start, their end, or a moment (ISO 8601 with its zone, as
    # YYYY-MM-DDThh:mm:ssZ): each partition from its first record at or after it; a partition with none, from its end.
    starting_offsets: Literal["earliest", "latest"] | AwareDatetime = "earliest"
    max_offsets_per_trigger: int | None = Field(default=None, gt=0)
    # A Kafka partition's range of more records than this is read by several tasks (Spark's maxRecordsPerPartition):
    # a backlog is decoded on every core, while a live micro-batch stays one task per partition with no shuffle.
    max_records_per_task: int | None = Field(default=100_000, gt=0)
    # How long `radar run` / `capture` / `poll-groups` wait for a configured cluster to answer before giving up.
    connect_timeout_s: float = Field(default=30.0, gt=0)
    security: SecurityConfig = SecurityConfig()

    @property
    def embedded(self) -> bool:
        return not self.bootstrap_servers


class LocalTuningConfig(FrozenSection):
    """The pieces of `pipelines.runtime.local_runtime` a local master uses: all by default; one is turned off to measure
    what it saves (`benchmarks/local_tuning.py`)."""

    worker_daemon: bool = True
    shell_free_fs: bool = True
    quick_start: bool = True
    class_archive: bool = True
    unix_sockets: bool = True
    checkpoint_rename: bool = True


class SparkConfig(FrozenSection):
    """The SparkSession radar builds (any master); ignored on Databricks and under spark-submit, whose session and
    master are given."""

    master: str = "local[2]"
    app_name: str = "rebalance-radar"
    shuffle_partitions: int = Field(default=2, gt=0)
    # Use only the jars in this folder (as written by `radar jars --export`), never the network.
    jars_dir: Path | None = None
    # Where resolved jars are cached; default ~/.cache/rebalance-radar/jars.
    jars_cache_dir: Path | None = None
    # Which connectors the session needs: replay/decode/sql need only delta.
    connectors: tuple[Literal["kafka", "delta"], ...] = ("kafka", "delta")
    # Explicit connector versions; None = the version of the installed pip package (pyspark / delta-spark).
    kafka_connector_version: str | None = None
    kafka_token_provider_version: str | None = None  # None = kafka_connector_version
    delta_version: str | None = None
    # The driver JVM's heap (on a local master, executors' too): Spark's 1g default is exhausted by a 160 MB dump.
    driver_memory: str = Field(default="4g", pattern=r"^[1-9][0-9]*[mMgG]$")
    extra_conf: dict[str, str] = Field(default_factory=dict)
    # The Python the executors' workers run (a cluster master); None = the interpreter radar runs with.
    executor_python: str | None = None
    local_tuning: LocalTuningConfig = LocalTuningConfig()
    class_archive_dir: Path | None = None  # local_tuning.class_archive's folder; default: class-archives/ by the jars
    # Level of Spark's JVM logging on the console (`--verbose` sets WARN).
    log_level: Literal["ERROR", "WARN", "INFO", "DEBUG"] = "ERROR"


class StorageConfig(FrozenSection):
    """Where tables live: a local data dir, or Unity Catalog catalog.schema on Databricks."""

    data_dir: Path = Path(".radar")
    catalog: str | None = None
    schema_name: str | None = Field(default=None, alias="schema")
    table_prefix: str = ""
    # a table micro-batches append to is compacted (OPTIMIZE) after this many writes of one process (50 small files:
    # Delta's own auto-compaction threshold, autoCompact.minNumFiles)
    compact_after_writes: int = Field(default=50, ge=1)

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class BrokerConfig(FrozenSection):
    """The embedded Apache Kafka broker: version and the small group timeouts that keep tests fast."""

    version: str = "4.3.1"
    host: str = "127.0.0.1"
    startup_timeout_s: float = Field(default=90.0, gt=0)
    heap: str = "512m"
    # The broker JVM's other options (garbage collector, JIT), split as a shell would.
    java_options: str = "-XX:+UseG1GC"
    group_initial_rebalance_delay_ms: int = Field(default=0, ge=0)
    group_min_session_timeout_ms: int = Field(default=1000, gt=0)
    group_consumer_session_timeout_ms: int = Field(default=6000, gt=0)
    group_consumer_min_session_timeout_ms: int = Field(default=1000, gt=0)
    group_consumer_heartbeat_interval_ms: int = Field(default=1000, gt=0)
    group_consumer_min_heartbeat_interval_ms: int = Field(default=500, gt=0)
    # Level of the group coordinator loggers (kafka.coordinator.group, org.apache.kafka.coordinator.group).
    coordinator_log_level: Literal["INFO", "DEBUG", "TRACE"] = "INFO"
    extra_properties: dict[str, str] = Field(default_factory=dict)

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


class IngestConfig(FrozenSection):
    """Streaming ingest: trigger, checkpoints (relative paths are under the data dir), bronze on/off.

    The trigger sets how fresh the bronze/silver history is, not how soon a detection shows: a live detection
    query decodes the Kafka streams itself (`pipelines.stages.detect`). Each ingest micro-batch costs seconds whatever
    it holds, so a short trigger spends the cores the detection query needs (measured in the benchmarks' journal,
    `benchmarks/results/`)."""

    trigger_interval: TriggerInterval = "10 seconds"
    checkpoint_location: Path = Path("checkpoints")
    bronze_enabled: bool = True


def _threshold_overrides() -> type[FrozenSection]:
    """`detect.thresholds`: any field of `DetectorThresholds` by name, typed as the dataclass types it, every one
    optional; a name not given keeps the dataclass's default (the defaults live there alone). Checked at load like
    every other key: an unknown name or a wrong type is a sentence that names `detect.thresholds.<name>`."""
    hints = typing.get_type_hints(DetectorThresholds)
    fields: dict[str, Any] = {
        f.name: (hints[f.name], None) for f in dataclasses.fields(DetectorThresholds) if not f.metadata.get("learnt")
    }
    return create_model("ThresholdOverrides", __base__=FrozenSection, **fields)


ThresholdOverrides = _threshold_overrides()


OWN_GROUP_PREFIX = "rebalance-radar-source"
"""The group id prefix of radar's own Kafka source consumers (Spark's `groupIdPrefix`; Spark's default would be
`spark-kafka-source`, which users' own Spark applications share): a secured cluster grants radar's principal Read on
groups with this prefix, and the detection leaves them out (`detect.include_own_groups`)."""


class DetectConfig(FrozenSection):
    """The stateful detection query: event-time lateness, trigger, the clock-tick period, state TTL, thresholds
    (`ThresholdOverrides`; `detector_thresholds()` applies them)."""

    # How long after an event its telemetry may still arrive (telemetry lags the records it explains).
    lateness_ms: int = Field(default=2000, ge=0)
    # Live, show a detection as soon as the events ahead of the watermark open it (status `provisional`), confirmed
    # or withdrawn once the watermark passes them; off: detections appear only once the watermark has passed.
    provisional_detections: bool = True
    trigger_interval: TriggerInterval = "1 second"
    # A live run's gold query MERGEs `rebalances`, `group_health` and the later versions of detections (a confirmed
    # or resolved row) from `detector_output` this often: they are off the detection query's path, and a longer
    # trigger coalesces many detection batches into one upsert.
    gold_trigger_interval: TriggerInterval = "30 seconds"
    # `radar maintain` deletes `detector_output` rows staged longer ago than this (the gold query has MERGEd them).
    staged_retention_hours: int = Field(default=24, gt=0)
    # `radar run` writes a radar.clock/1 tick this often, so event time advances while every group is silent.
    tick_interval_ms: int = Field(default=1000, gt=0)
    # State TTL in event time: this long after a group's last activity the tracker is asked whether the group is
    # idle (`is_expired`) and its state is dropped if so (Spark allows no ValueState TTL in EventTime mode).
    state_ttl_ms: int = Field(default=3600 * 1000, gt=0)
    # The consumer groups of radar's own Kafka source (`OWN_GROUP_PREFIX`) are left out of the gold tables, the
    # report and the alerts; true watches them like any group.
    include_own_groups: bool = False
    thresholds: ThresholdOverrides = Field(default_factory=ThresholdOverrides)  # type: ignore[valid-type]

    def threshold_overrides(self) -> dict[str, Any]:
        """The thresholds the conf names, validated (the others keep `DetectorThresholds`' defaults)."""
        return self.thresholds.model_dump(exclude_unset=True)

    def detector_thresholds(self) -> DetectorThresholds:
        return DetectorThresholds(**self.threshold_overrides())

    def with_thresholds(self, **overrides: Any) -> DetectConfig:
        """This section with more threshold overrides, validated as the conf's are (`model_copy` checks nothing)."""
        return self.model_copy(update={"thresholds": ThresholdOverrides(**(self.threshold_overrides() | overrides))})


_UNIT_SECONDS = {"microsecond": 1e-6, "millisecond": 1e-3, "second": 1, "minute": 60, "hour": 3600, "day": 86400}
_UNIT_SECONDS["week"] = 7 * _UNIT_SECONDS["day"]


def interval_seconds(text: str) -> float:
    """A `TriggerInterval` ("10 seconds") in seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*", text, re.IGNORECASE)
    if found is None:
        raise ValueError(f"not an interval: {text!r}")
    return float(found.group(1)) * _UNIT_SECONDS[found.group(2).lower()]


class LagConfig(FrozenSection):
    """Consumer lag: `radar run` (and `radar poll-groups`) poll the log-end offsets of the partitions the monitored
    groups commit every `poll_interval` and publish them on the first telemetry topic (`radar.end_offsets/1`), from
    which `group_lag` and the lag detections are computed, live and in replays."""

    enabled: bool = True
    poll_interval: TriggerInterval = "10 seconds"

    @property
    def poll_interval_s(self) -> float:
        return interval_seconds(self.poll_interval)


SeverityName = Literal["info", "warning", "critical"]


class IncidentsConfig(FrozenSection):
    """Cross-group incidents (`transforms.incidents`): how far apart one incident's events may be, and how many
    groups make one. Defaults and their reasons: `IncidentSettings`."""

    window_ms: int = Field(default=60_000, gt=0)
    min_groups: int = Field(default=2, ge=2)
    unexplained_min_groups: int = Field(default=3, ge=2)
    max_span_ms: int = Field(default=600_000, gt=0)


class CheckRuleConfig(FrozenSection):
    """Overrides of one alert rule (`expectations.rules.RULES` holds the defaults); unset keys keep them."""

    enabled: bool | None = None
    threshold: float | None = None
    severity: SeverityName | None = None


class ChecksConfig(FrozenSection):
    """The expectation checks (`radar check`, and on a schedule inside `radar run`) and where their alerts go.

    `routes` maps each notifier to the lowest severity it receives (a notifier left out receives nothing). Webhook
    URLs are secrets: only the *names* of the environment variables (or the keys in a Databricks secret scope) are
    configured here; a routed notifier whose URL is not set is reported as not configured by every run.
    """

    interval_s: float = Field(default=60.0, gt=0)  # `radar run` runs the checks this often (0 < interval)
    in_run: bool = True  # run them inside `radar run` at all
    rules: dict[RuleName, CheckRuleConfig] = Field(default_factory=dict)  # a rule's name is checked at load
    routes: dict[Literal["log", "webhook", "slack"], SeverityName] = Field(
        default_factory=lambda: {"log": "info", "webhook": "warning", "slack": "critical"}
    )
    webhook_url_env: str = "RADAR_WEBHOOK_URL"
    slack_webhook_url_env: str = "RADAR_SLACK_WEBHOOK_URL"
    secret_scope: str | None = None  # Databricks: read the URLs from this scope instead of the environment
    webhook_url_key: str | None = None
    slack_webhook_url_key: str | None = None
    attempts: int = Field(default=3, ge=1, le=10)  # per notification and run; a failure is retried next run
    backoff_s: float = Field(default=0.5, ge=0)  # doubled after each failed attempt
    timeout_s: float = Field(default=5.0, gt=0)


class MaintainConfig(FrozenSection):
    """`radar maintain`: how long VACUUM keeps files no table version needs any more.

    None keeps Delta's own safe default (the table's `delta.deletedFileRetentionDuration`, 7 days): readers and
    streams still on an older version keep their files. A shorter retention must be configured here on purpose.
    """

    vacuum_retention_hours: int | None = Field(default=None, ge=0)


class RadarConfig(FrozenSection):
    """The whole configuration of one environment."""

    cluster: str = "local"
    kafka: KafkaConfig = KafkaConfig()
    spark: SparkConfig = SparkConfig()
    storage: StorageConfig = StorageConfig()
    broker: BrokerConfig = BrokerConfig()
    ingest: IngestConfig = IngestConfig()
    detect: DetectConfig = DetectConfig()
    lag: LagConfig = LagConfig()
    incidents: IncidentsConfig = IncidentsConfig()
    checks: ChecksConfig = ChecksConfig()
    maintain: MaintainConfig = MaintainConfig()

    @property
    def data_dir(self) -> Path:
        return self.storage.data_dir

    @property
    def checkpoint_dir(self) -> Path:
        location = self.ingest.checkpoint_location
        return location if location.is_absolute() else self.storage.data_dir / location

    @property
    def data_dir_writable(self) -> bool:
        """Whether radar may write the data dir (a new one: whether it can be made)."""
        folder = self.data_dir
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        return os.access(folder, os.W_OK)

    @property
    def scratch_dir(self) -> Path:
        """Where a session keeps what it writes beside the tables (Spark's log config and log, its catalog's
        files): the data dir, or a folder of the temp dir for a read-only data dir, which the read-only commands
        (sql, detections, report) serve as well."""
        if self.data_dir_writable:
            return self.data_dir
        import hashlib
        import tempfile

        return Path(tempfile.gettempdir()) / f"radar-{hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:12]}"

    def with_data_dir(self, data_dir: Path) -> RadarConfig:
        """A copy with another data dir (what `--data-dir` does): a relative one is relative to the current folder,
        where the user typed it."""
        storage = self.storage.model_copy(update={"data_dir": Path(data_dir).expanduser().resolve()})
        return self.model_copy(update={"storage": storage})


def resolve_conf_path(path: str | os.PathLike[str]) -> Path:
    """Find a config file as given, else relative to the repository (so `radar` works from any cwd)."""
    candidate = Path(path)
    if candidate.is_file():
        return candidate
    if not candidate.is_absolute() and (REPO_ROOT / candidate).is_file():
        return REPO_ROOT / candidate
    raise ConfigError(
        f"Config file {str(path)!r} does not exist (looked in {Path.cwd()} and {REPO_ROOT}); "
        "pass --conf with the path of a YAML file such as conf/local.yml."
    )


def env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """RADAR__KAFKA__BOOTSTRAP_SERVERS=x -> {"kafka": {"bootstrap_servers": "x"}}; values parsed as YAML (a list
    may also be given comma-separated, see `FrozenSection`)."""
    nested: dict[str, Any] = {}
    for name, raw in sorted(env.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        keys = [part.lower() for part in name[len(ENV_PREFIX) :].split(ENV_SEPARATOR)]
        if not all(keys):
            raise ConfigError(f"Environment variable {name} is not of the form RADAR__SECTION__KEY.")
        target = nested
        for key in keys[:-1]:
            target = target.setdefault(key, {})
            if not isinstance(target, dict):
                raise ConfigError(f"Environment variable {name} sets a key below {key!r}, which is a value.")
        try:
            target[keys[-1]] = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError:
            target[keys[-1]] = raw
    return nested


def merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: mappings merge key by key, anything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def describe_validation_error(error: ValidationError, source: str) -> str:
    """One sentence per problem: the dotted key, what was found and what is expected."""
    sentences = []
    for problem in error.errors():
        key = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        if problem["type"] == "extra_forbidden":
            sentences.append(f"{key}: unknown key; check its spelling against pipelines/config.py.")
        else:
            found = problem.get("input")
            shown = "" if isinstance(found, dict) else f" (got {found!r})"
            sentences.append(f"{key}: {problem['msg']}{shown}.")
    return f"Invalid configuration in {source}: " + " ".join(sentences)


def anchored_data_dir(config: RadarConfig, conf_path: Path, overrides: Mapping[str, Any]) -> RadarConfig:
    """The one rule for where the data lives: a relative `storage.data_dir` in a conf file is relative to that
    file's folder (so `radar sql` finds the tables `radar replay` wrote, from whatever folder it runs); one given
    by the user (RADAR__STORAGE__DATA_DIR, `--data-dir`) is relative to the current folder."""
    data_dir = config.storage.data_dir.expanduser()
    if "data_dir" in overrides.get("storage", {}):
        return config.with_data_dir(data_dir)
    if not data_dir.is_absolute():
        data_dir = conf_path.resolve().parent / data_dir
    return config.with_data_dir(data_dir)


def load_config(path: str | os.PathLike[str] = DEFAULT_CONF_PATH, env: Mapping[str, str] = os.environ) -> RadarConfig:
    """Read conf/<env>.yml, apply RADAR__* overrides from `env`, validate into a frozen RadarConfig (its data dir
    absolute: `anchored_data_dir`)."""
    conf_path = resolve_conf_path(path)
    try:
        loaded = yaml.safe_load(conf_path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{conf_path} is not valid YAML ({error}); fix the file.") from error
    if not isinstance(loaded, dict):
        raise ConfigError(f"{conf_path} must hold a mapping of sections (cluster, kafka, spark, ...).")
    overrides = env_overrides(env)
    source = str(conf_path) + (" with RADAR__* environment overrides" if overrides else "")
    try:
        config = RadarConfig.model_validate(merge(loaded, overrides))
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, source)) from None
    return anchored_data_dir(config, conf_path, overrides)


# --- Kafka client options: secrets are read here, at run time, and masked in every printed form ---


class KafkaClientOptions(ClientSettings):
    """Spark Kafka source options (`kafka.*`); a Mapping whose repr/str mask every secret value."""


def kafka_client_options(
    kafka: KafkaConfig,
    bootstrap_servers: str | None = None,
    env: Mapping[str, str] = os.environ,
    secret_lookup: SecretLookup | None = None,
    shaded: bool = False,
) -> KafkaClientOptions:
    """The `kafka.*` options for Spark's Kafka source: the one builder's Java client settings
    (`emitters.kafka_settings.client_settings`), credentials from env or the secret scope. `shaded=True` uses
    Databricks' shaded login-module class names."""
    servers = bootstrap_servers or kafka.bootstrap_servers
    if not servers:
        raise ConfigError(
            "kafka.bootstrap_servers is empty: start the embedded broker and pass its "
            "address, or set kafka.bootstrap_servers (RADAR__KAFKA__BOOTSTRAP_SERVERS)."
        )
    settings = client_settings(servers, kafka.security, env, secret_lookup, java=True, shaded=shaded)
    return KafkaClientOptions({f"kafka.{key}": value for key, value in settings.items()})
