"""`radar`: the command line. Thin by design: parse arguments, call a pipeline, turn errors into sentences."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from rebalance_radar.pipelines.config import ConfigError, RadarConfig, load_config
from rebalance_radar.pipelines.formats.dump import DumpFormatError
from rebalance_radar.pipelines.runtime.console import OUTPUT_FORMATS, output_console, print_line, write_records
from rebalance_radar.pipelines.runtime.phases import mark, phase

if TYPE_CHECKING:
    import pyarrow as pa

    from rebalance_radar.transforms.schemas import TableSchema


def _config(args: argparse.Namespace) -> RadarConfig:
    config = load_config(args.conf)
    if args.data_dir:
        config = config.with_data_dir(Path(args.data_dir))
    if getattr(args, "verbose", False):
        from rebalance_radar.emitters.cluster_probe import show_client_logs

        show_client_logs()
        spark = config.spark.model_copy(update={"log_level": "WARN"})
        config = config.model_copy(update={"spark": spark})
    if getattr(args, "jars_dir", None):
        spark = config.spark.model_copy(update={"jars_dir": Path(args.jars_dir)})
        config = config.model_copy(update={"spark": spark})
    return config


WRITES_DATA_DIR = frozenset({"run", "replay", "check", "maintain", "repair-checkpoint", "demo"})
"""The commands that write the data dir's tables or checkpoints; the others only read it (sql, detections,
report, tables) and serve a read-only data dir."""


def refuse_read_only_data_dir(args: argparse.Namespace) -> None:
    """One sentence, before any work, for a command that must write a data dir it may not."""
    if args.command not in WRITES_DATA_DIR:
        return
    config = _config(args)
    if not config.data_dir_writable:
        raise ConfigError(
            f"the data dir {config.data_dir} is read-only for this user: radar {args.command} writes its tables and "
            "checkpoints there. Give it a writable --data-dir (or RADAR__STORAGE__DATA_DIR), or use a command that "
            "only reads (radar sql, radar detections, radar report)."
        )


def _delta_only(config: RadarConfig) -> RadarConfig:
    """`config` for a command that only reads the tables: no Kafka connector jars to load or verify."""
    return config.model_copy(update={"spark": config.spark.model_copy(update={"connectors": ("delta",)})})


def _print_counts(command: str, counts: dict[str, int]) -> None:
    print(f"radar {command}: rows per table: " + ", ".join(f"{k}={v:,}" for k, v in counts.items()), file=sys.stderr)


def _decode(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.formats.dump_json import run_decode

    counts = run_decode(args.input, embedded=args.embedded)
    failures = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.failures_by_kind.items())) or "none"
    print(
        f"radar decode: {counts.records} records: {counts.decoded} decoded, {counts.failed} failed ({failures}), "
        f"{counts.telemetry} telemetry; {counts.bad_lines} bad lines (not dump records, skipped)",
        file=sys.stderr,
    )
    if counts.bad_lines and not counts.records:
        print("radar decode: no dump records at all; is this a radar dump file?", file=sys.stderr)
        return 2
    return 0


def _jars(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.runtime.jvm import run_jars, spark_connector_jars

    if args.spark_jars:  # for spark-submit --jars: its JVM is started before radar runs
        print(",".join(str(jar) for jar in spark_connector_jars(_config(args))))
        return 0
    return run_jars(_config(args), Path(args.export) if args.export else None)


def _replay(args: argparse.Namespace) -> int:
    with phase("import pipelines"):
        from rebalance_radar.pipelines.cli.monitor import run_replay
        from rebalance_radar.pipelines.formats.dump import check_dump_files

    config = _config(args)
    check_dump_files(args.input)  # a typo is said before anything else, and before Spark starts
    print(f"radar replay: data dir {config.data_dir}", file=sys.stderr)
    counts, _summary = run_replay(config, args.input)  # the summary is printed by run_replay
    _print_counts("replay", counts)
    return 0


def _probe(
    config: RadarConfig, bootstrap: str, *, read_topics: Sequence[str] = (), describe_groups: bool = False
) -> None:
    """Fail within kafka.connect_timeout_s, in one sentence, when nothing answers at `bootstrap`, when it refuses
    the credentials, or when the principal lacks Read on `read_topics` / Describe on the groups."""
    from rebalance_radar.emitters.cluster_probe import probe_access, probe_cluster
    from rebalance_radar.emitters.kafka_settings import client_settings

    settings = client_settings(bootstrap, config.kafka.security, os.environ)
    probe_cluster(settings, config.kafka.connect_timeout_s)
    probe_access(settings, config.kafka.connect_timeout_s, read_topics=read_topics, describe_groups=describe_groups)


def _run(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.cli.monitor import run_live

    config = _config(args)
    if config.kafka.bootstrap_servers:  # the embedded broker is waited for by its own start-up check
        _probe(config, config.kafka.bootstrap_servers, read_topics=[config.kafka.offsets_topic])
    _print_counts("run", run_live(config, stop_after_s=args.stop_after))
    return 0


def _groups(args: argparse.Namespace) -> int:
    with phase("import pipelines"):
        from rebalance_radar.pipelines.cli.detections_view import detections_location
        from rebalance_radar.pipelines.cli.groups_view import (
            GROUP_COLUMNS,
            load_groups,
            local_sources,
            render_groups,
            spark_sources,
        )

    config = _config(args)
    detections_location(config)  # no tables yet: one sentence, before anything starts
    sources = local_sources(config) if args.engine == "local" else None
    if sources is None:  # a catalog's tables, --engine spark, or files delta-rs cannot read exactly
        from rebalance_radar.pipelines.runtime.session import build_spark_session

        sources = spark_sources(build_spark_session(_delta_only(config), quick_start=True), config)
    with phase("load groups"):
        rows = load_groups(sources)
    if args.format != "table":
        write_records(rows, GROUP_COLUMNS, args.format, sys.stdout)
        return 0
    render_groups(rows, output_console())
    return 0


def _detections(args: argparse.Namespace) -> int:
    with phase("import pipelines"):
        from rebalance_radar.pipelines.cli.detections_view import (
            detections_location,
            load_detections,
            load_incidents,
            load_local_detections,
            load_local_incidents,
            render_with_incidents,
        )

    config = _config(args)
    location = detections_location(config)
    rows = None
    incidents = None
    if location is not None and args.engine == "local":  # no JVM: deltalake and DuckDB
        with phase("load detections"):
            rows = load_local_detections(location, group=args.group, open_only=args.open)
            incidents = load_local_incidents(config, group=args.group, open_only=args.open)
    if rows is None or incidents is None:  # a catalog's table, --engine spark, or files delta-rs cannot read exactly
        from rebalance_radar.pipelines.runtime.session import build_spark_session

        spark = build_spark_session(_delta_only(config), quick_start=True)
        with phase("load detections"):
            if rows is None:
                rows = load_detections(spark, config, group=args.group, open_only=args.open)
            incidents = load_incidents(spark, config, group=args.group, open_only=args.open)
    scope = " ".join(
        part
        for part in ("open" if args.open else "", "detections", f"of group {args.group}" if args.group else "")
        if part
    )
    if args.format != "table":
        from rebalance_radar.transforms.schemas import DETECTIONS

        write_records(rows, DETECTIONS.column_names, args.format, sys.stdout)
        return 0
    render_with_incidents(rows, incidents, output_console(), title=scope)  # cross-group incidents first
    return 0


def _watch(args: argparse.Namespace) -> int:
    with phase("import pipelines"):
        from rebalance_radar.pipelines.cli.watch import run_watch

    return run_watch(_config(args), args.interval, count=args.count)


def _sql(args: argparse.Namespace) -> int:
    with phase("import pipelines"):
        from pyspark.errors import AnalysisException

        from rebalance_radar.pipelines.cli.oncall_queries import bind_parameters
        from rebalance_radar.pipelines.runtime.session import build_spark_session
        from rebalance_radar.pipelines.storage.table_reference import tables_named_in
        from rebalance_radar.pipelines.storage.tables import TableCatalog, register_existing_tables

    query, params = _sql_text(args)
    query = bind_parameters(query, params) if params else query
    config = _config(args)
    named = tables_named_in(query)
    if args.engine == "local" and TableCatalog(config).tables_dir is not None:
        return _sql_on_duckdb(args, config, query, named)
    spark = build_spark_session(_delta_only(config), quick_start=True)
    with phase("register tables"):
        present = register_existing_tables(spark, config, named)
    try:
        with phase("query"):
            result = spark.sql(query)
        if args.format != "table":
            rows = (row.asDict(recursive=True) for row in result.toLocalIterator())
            write_records(rows, result.columns, args.format, sys.stdout)
        else:
            with phase("query"):
                shown = [row.asDict(recursive=True) for row in result.limit(args.limit + 1).collect()]
            print_result_table(result.columns, shown, args.limit)
    except AnalysisException as error:  # ParseException included: a sentence and a hint, never the JVM stack
        raise ConfigError(sql_error_sentence(error, query, present, config.data_dir)) from None
    return 0


def _sql_on_duckdb(args: argparse.Namespace, config: RadarConfig, query: str, named: Sequence[TableSchema]) -> int:
    """`radar sql` on DuckDB: the local tables the query names, scanned from their files, no JVM; the Spark SQL
    translated to DuckDB's dialect first (`duckdb_sql`)."""
    import duckdb

    from rebalance_radar.pipelines.cli.duckdb_sql import duckdb_sql
    from rebalance_radar.pipelines.storage.delta_log import dataset_of
    from rebalance_radar.pipelines.storage.tables import TableCatalog
    from rebalance_radar.transforms.schemas import TABLES

    translated = duckdb_sql(query)  # a typo is told before any table is read
    catalog = TableCatalog(config)
    with duckdb.connect() as connection:
        present = []
        for table in named or list(TABLES.values()):
            location = catalog.location(table)
            if location is None:
                raise ConfigError(f"{table.name} is in a catalog, not a local data dir: use --engine spark.")
            if not (location / "_delta_log").is_dir():
                continue
            dataset = dataset_of(location)
            if dataset is None:
                raise ConfigError(f"{table.name} uses a Delta feature DuckDB's reader lacks: use --engine spark.")
            connection.register(table.name, dataset)
            present.append(table.name)
        try:
            result = connection.execute(translated).to_arrow_table()
        except duckdb.Error as error:
            first = str(error).strip().splitlines()[0]
            raise ConfigError(
                f"DuckDB: {first} (the tables here: {', '.join(present) or 'none yet'}; --engine spark runs it on "
                "Spark)."
            ) from None
    result = as_spark_collects(result)
    rows = result.to_pylist()
    if args.format != "table":
        write_records(rows, result.column_names, args.format, sys.stdout)
        return 0
    print_result_table(result.column_names, rows, args.limit)
    return 0


def as_spark_collects(result: pa.Table) -> pa.Table:
    """DuckDB's answer with Spark's types where they differ, so both engines print and write the same: sums and
    counts of integers come as HUGEINT (decimal(38, 0) in Arrow), back to 64-bit integers (BIGINT) where they fit;
    timestamps come with their UTC zone, naive UTC as Spark collects them (its session zone is UTC)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for index, field in enumerate(result.schema):
        if pa.types.is_decimal(field.type) and field.type.scale == 0 and field.type.precision == 38:
            try:
                result = result.set_column(index, field.name, pc.cast(result.column(index), pa.int64()))
            except pa.ArrowInvalid:
                continue  # beyond 64 bits: kept as the decimal it is
        elif pa.types.is_timestamp(field.type) and field.type.tz is not None:
            naive = pa.timestamp(field.type.unit)
            result = result.set_column(index, field.name, result.column(index).cast(naive))
    return result


def print_result_table(columns: Sequence[str], rows: Sequence[dict[str, object]], limit: int) -> None:
    """`radar sql`'s table: the first `limit` rows fitted to the width (the widest column folds), and a line saying
    how to see the rest when there are more."""
    from rebalance_radar.pipelines.cli.detections_view import cell_text
    from rebalance_radar.pipelines.runtime.console import fitted_table, print_line, print_table

    console = output_console()
    cells = [[cell_text(row.get(name)) for name in columns] for row in rows[:limit]]
    widest = max(columns, key=lambda name: max((len(row[columns.index(name)]) for row in cells), default=0))
    table, _shown = fitted_table("", columns, cells, console.width, flexible=widest)
    print_table(console, table)
    noun = "row" if len(rows) == 1 else "rows"
    if len(rows) > limit:
        print_line(console, f"the first {limit} rows shown: --limit N shows more, --format csv|json prints them all")
    else:
        print_line(console, f"{len(rows)} {noun}")


def _sql_text(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The SQL of `radar sql`: the query given, or the file of `--file` with its `--param` values checked against
    the parameters its header declares (before Spark starts)."""
    from rebalance_radar.pipelines.cli.oncall_queries import check_params, parse_params, parse_query

    params = parse_params(args.param or ())
    if (args.query is None) == (args.file is None):
        raise ConfigError('radar sql takes a query or --file FILE.sql, exactly one: e.g. radar sql "SELECT 1".')
    if args.file is None:
        return args.query, params
    from rebalance_radar.pipelines.config import REPO_ROOT

    path = Path(args.file)
    if not path.is_file() and not path.is_absolute() and (REPO_ROOT / path).is_file():
        path = REPO_ROOT / path  # `--file queries/x.sql` from any folder, as --conf
    if not path.is_file():
        raise ConfigError(f"There is no query file {args.file}; `radar queries` lists the on-call queries.")
    query = parse_query(path)
    check_params(query, params, str(path))
    return query.sql, params


def sql_error_sentence(error: Exception, query: str, present: Sequence[str], data_dir: Path) -> str:
    """The error class and the first line of Spark's message, then what exists: the tables, or the columns of the
    tables the query names."""
    from rebalance_radar.pipelines.storage.table_reference import describe_table, tables_named_in

    condition = getattr(error, "getCondition", getattr(error, "getErrorClass", lambda: None))() or "SQL_ERROR"
    message = (getattr(error, "getMessage", lambda: str(error))() or str(error)).strip().splitlines()[0]
    message = message.removeprefix(f"[{condition}] ")
    named = tables_named_in(query)
    if not present:
        hint = f"there are no tables under {data_dir} yet: run `radar replay` or `radar run` first."
    elif condition.startswith("UNRESOLVED_COLUMN") and named:
        hint = "\n".join(describe_table(table) for table in named)
    else:
        names = ", ".join(name.rsplit(".", 1)[-1] for name in present)
        hint = f"tables: {names} (`radar tables NAME` lists a table's columns)"
    return f"[{condition}] {message}\n{hint}"


def _tables(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.storage.table_reference import (
        describe_table,
        list_tables,
        table_named,
        tables_markdown,
    )

    if args.markdown:
        print(tables_markdown())
    elif args.name:
        print(describe_table(table_named(args.name)))
    else:
        print(list_tables())
    return 0


def _capture(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.formats.capture import parse_time_ms, run_capture

    config = _config(args)
    bootstrap = args.bootstrap or config.kafka.bootstrap_servers
    if not bootstrap:
        raise ConfigError("radar capture needs a cluster: pass --bootstrap HOST:PORT or set kafka.bootstrap_servers.")
    _probe(config, bootstrap, read_topics=args.topic)
    run_capture(
        config.kafka,
        bootstrap,
        args.topic,
        Path(args.out),
        from_ms=parse_time_ms(args.from_time),
        to_ms=parse_time_ms(args.to_time),
        env=os.environ,
    )
    return 0


def _emitter_cluster(args: argparse.Namespace, command: str) -> tuple[dict[str, object], str]:
    """(librdkafka settings of the configured cluster, telemetry topic) for the emitters' subcommands."""
    config = _config(args)
    bootstrap = args.bootstrap or config.kafka.bootstrap_servers
    if not bootstrap:
        raise ConfigError(
            f"radar {command} needs a cluster: pass --bootstrap HOST:PORT or set kafka.bootstrap_servers."
        )
    from rebalance_radar.emitters.kafka_settings import client_settings

    settings = dict(client_settings(bootstrap, config.kafka.security, os.environ))
    if command == "poll-groups":
        from rebalance_radar.emitters.cluster_probe import probe_access, probe_cluster

        probe_cluster(settings, config.kafka.connect_timeout_s)
        probe_access(settings, config.kafka.connect_timeout_s, describe_groups=True)
    return settings, args.topic or config.kafka.telemetry_topics[0]


def _poll_groups(args: argparse.Namespace) -> int:
    from rebalance_radar.emitters.poll_groups import run_poll_groups

    settings, topic = _emitter_cluster(args, "poll-groups")
    lag = _config(args).lag
    counts = run_poll_groups(
        str(settings["bootstrap.servers"]),
        topic,
        interval_s=args.interval,
        groups=args.group or (),
        once=args.once,
        client_config=settings,
        lag_interval_s=lag.poll_interval_s if lag.enabled else None,
    )
    print(
        f"radar poll-groups: {counts.groups} group snapshots, {counts.events} events queued, {counts.delivered} "
        f"delivered, {counts.dropped} dropped, to {topic}",
        file=sys.stderr,
    )
    return _delivery_exit_code("poll-groups", counts.dropped + counts.failed, "events or group descriptions", topic)


def _ship_logs(args: argparse.Namespace) -> int:
    from rebalance_radar.emitters.log_shipper import run_shipper

    settings, args.topic = _emitter_cluster(args, "ship-logs")
    counts = run_shipper(args, settings)
    print(
        f"radar ship-logs: {counts.lines_kept:,} of {counts.lines_read:,} lines kept, {counts.delivered:,} delivered, "
        f"{counts.dropped:,} dropped, to {args.topic}",
        file=sys.stderr,
    )
    return _delivery_exit_code("ship-logs", counts.dropped, "lines", args.topic)


def _delivery_exit_code(command: str, lost: int, what: str, topic: str) -> int:
    """1 when an emitter lost anything (not delivered, or not described): a script or a supervisor must see it."""
    if not lost:
        return 0
    print(
        f"radar {command}: {what} that did not reach {topic}: {lost:,}; check the broker is up and reachable from "
        "here, that the topic exists, and that the principal may write to it (the lines above say which error the "
        "client got); then run it again.",
        file=sys.stderr,
    )
    return 1


def _tap(args: argparse.Namespace) -> int:
    import asyncio
    from dataclasses import asdict

    from rebalance_radar.emitters.protocol_tap import run

    settings, args.topic = _emitter_cluster(args, "tap")
    stats = asyncio.run(run(args, settings))
    print(json.dumps({"stopped": asdict(stats)}), flush=True)
    return _delivery_exit_code("tap", stats.dropped, "mirrored group-protocol events", args.topic)


def _check(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.checks.check import render_check_report, run_checks
    from rebalance_radar.pipelines.runtime.run_status import read_run_status
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    config = _config(args)
    # Spark only when a table is too big or remote to read from its files, or an alert changed: a healthy check
    # of a local data dir starts no JVM
    report = run_checks(functools.cache(lambda: build_spark_session(config)), config)
    console = output_console()
    render_check_report(report, console)
    run = read_run_status(config.data_dir)
    for line in run.lines() if run is not None else ["no radar run has written to this data dir yet"]:
        print_line(console, line)
    return 1 if report.failed_critical else 0


# --- radar demo, radar report (issue #10) ----------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.cli.demo import prepare_data_dir, print_demo_result, run_demo
    from rebalance_radar.pipelines.local.scenarios import scenario_named

    scenario_named(args.scenario)  # an unknown name is said before anything starts or is written
    config = _config(args)
    if not args.data_dir:  # the demo's own folder beside the default data dir: never mixed with `radar run`'s
        config = config.with_data_dir(config.data_dir / "demo")
    if config.kafka.bootstrap_servers:
        raise ConfigError("radar demo runs its own embedded broker; use a conf without kafka.bootstrap_servers.")
    prepare_data_dir(config.data_dir)
    console = output_console(sys.stderr)
    report = Path(args.out) if args.out else config.data_dir / "report.html"
    result = run_demo(config, args.scenario, report, console=console)
    print_demo_result(result, console)
    return 1 if result.scenario_error or result.missing else 0


def _report(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.cli.report import run_report

    config = _config(args)
    out = Path(args.out)
    data = run_report(config, out)
    what = "no gold tables there (the report says so)" if data is None else f"{len(data.groups)} group(s)"
    print(f"radar report: {out} written from {config.data_dir}: {what}", file=sys.stderr)
    return 0


def _repair_checkpoint(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.storage.checkpoint_repair import find_damage, set_aside
    from rebalance_radar.pipelines.storage.data_dir_locks import STREAM_LOCKS, hold_stream, release_stream

    config = _config(args)
    checkpoints = config.checkpoint_dir
    held = []
    try:  # no radar may run on the data dir meanwhile: each stream's lock, taken (or its holder named)
        for lock in sorted((checkpoints / STREAM_LOCKS).glob("*.lock")):
            held.append(hold_stream(checkpoints, lock.stem))
        damage = find_damage(checkpoints) if checkpoints.is_dir() else []
        if not damage:
            print(f"radar repair-checkpoint: every checkpoint under {checkpoints} reads as Spark wrote it: no repair.")
            return 0
        for found in damage:
            print(f"radar repair-checkpoint: damaged: {found.line(checkpoints)}")
        if args.dry_run:
            print("radar repair-checkpoint: --dry-run: nothing moved; run it without --dry-run to repair.")
            return 1
        aside, moved = set_aside(damage, checkpoints)
        print(
            f"radar repair-checkpoint: set aside {len(moved)} file(s) in {aside}: the queries redo those batches when "
            "radar starts again, and write no record twice."
        )
        return 0
    finally:
        for lock in held:
            release_stream(lock)


def _maintain(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.runtime.session import build_spark_session
    from rebalance_radar.pipelines.storage.maintain import check_table_names, retention_hours, run_maintain

    check_table_names(args.table or ())  # a typo is said before Spark starts
    config = _config(args)
    spark = build_spark_session(config)
    print(f"radar maintain: VACUUM retention {retention_hours(config)} hours", file=sys.stderr)
    results = run_maintain(spark, config, args.table or (), report=lambda r: print(f"radar maintain: {r.line()}"))
    if not results:
        print(f"radar maintain: no tables under {config.data_dir} yet: nothing to do.", file=sys.stderr)
    return 0


def _queries(args: argparse.Namespace) -> int:
    from rebalance_radar.pipelines.cli.oncall_queries import dashboard_json, describe_queries, oncall_queries

    queries = oncall_queries()
    print(dashboard_json(queries) if args.dashboard else describe_queries(queries), end="" if args.dashboard else "\n")
    return 0


GLOBAL_DEFAULTS: dict[str, str | bool | None] = {
    "conf": "conf/local.yml",
    "data_dir": None,
    "jars_dir": None,
    "verbose": False,
}


def _add_global_options(parser: argparse.ArgumentParser, defaults: dict[str, str | bool | None]) -> None:
    """Options every command takes, before or after its name; a subcommand's copy defaults to SUPPRESS so it only
    overrides the value given before the command when it is given itself."""
    parser.add_argument(
        "--conf",
        default=defaults["conf"],
        help="config file (default: conf/local.yml here, else the packaged one); a relative storage.data_dir in it "
        "is relative to its folder",
    )
    parser.add_argument(
        "--data-dir", default=defaults["data_dir"], help="where local Delta tables and checkpoints live"
    )
    parser.add_argument(
        "--verbose", action="store_true", default=defaults["verbose"], help="show Spark's WARN lines and client logs"
    )
    parser.add_argument(
        "--jars-dir", default=defaults["jars_dir"], help="use JVM jars from this folder (`radar jars --export`)"
    )


def _add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=OUTPUT_FORMATS,
        default="table",
        help="table (default: fitted to the terminal, or COLUMNS), json (one object a line) or csv (with a header)",
    )


class RadarArgumentParser(argparse.ArgumentParser):
    """argparse, with a mistake said in one line that says what to do (not the usage block before it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}; `{self.prog} --help` lists what it takes.\n")


def build_parser() -> argparse.ArgumentParser:
    parser = RadarArgumentParser(
        prog="radar",
        description="rebalance-radar: decode __consumer_offsets and heartbeat telemetry, detect rebalance trouble.",
    )
    _add_global_options(parser, GLOBAL_DEFAULTS)
    sub = parser.add_subparsers(dest="command", required=True)

    decode = sub.add_parser("decode", help="decode dump files to JSON Lines on stdout")
    decode.add_argument(
        "--input", action="append", required=True, metavar="DUMP", help="dump file (repeatable; -: stdin)"
    )
    decode.add_argument(
        "--embedded", action="store_true", help="also decode consumer-protocol subscriptions/assignments"
    )
    decode.set_defaults(func=_decode)

    jars = sub.add_parser("jars", help="resolve the JVM artifacts (Spark connectors, Kafka broker); list or export")
    jars.add_argument("--export", metavar="DIR", help="copy the jars into DIR for machines without Maven access")
    jars.add_argument(
        "--spark-jars", action="store_true", help="print the Spark connector jars comma-separated (spark-submit --jars)"
    )
    jars.set_defaults(func=_jars)

    run = sub.add_parser(
        "run", help="ingest and detect live, with a clock tick every second (embedded broker by default)"
    )
    run.add_argument("--stop-after", type=float, default=None, metavar="S", help="stop after S seconds")
    run.set_defaults(func=_run)

    replay = sub.add_parser("replay", help="ingest dump files, then detect, to completion; summarise")
    replay.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="FILE",
        help="a dump file, or a broker's or client's log file read as telemetry (repeatable)",
    )
    replay.set_defaults(func=_replay)

    groups = sub.add_parser(
        "groups", help="one line per consumer group: state, last rebalance, open incidents (worst first)"
    )
    groups.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="local (default): read a local data dir's tables without a JVM; spark: with Spark",
    )
    _add_format_option(groups)
    groups.set_defaults(func=_groups)

    detections = sub.add_parser("detections", help="show the detections as a table, newest first")
    detections.add_argument("--group", default=None, help="only this consumer group")
    detections.add_argument("--open", action="store_true", help="only detections still open")
    detections.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="local (default): read a local data dir's table without a JVM; spark: with Spark (a catalog's tables "
        "always are)",
    )
    _add_format_option(detections)
    detections.set_defaults(func=_detections)

    watch = sub.add_parser(
        "watch",
        help="the on-call screen: groups (with lag when measured) and open detections, refreshed from the tables "
        "without a JVM; Ctrl-C to stop",
    )
    watch.add_argument("--interval", type=float, default=5.0, metavar="S", help="seconds between refreshes (default 5)")
    watch.add_argument("--count", type=int, default=None, metavar="N", help="stop after N refreshes (default: never)")
    watch.set_defaults(func=_watch)

    sql = sub.add_parser("sql", help="run Spark SQL over the tables (by name, e.g. offset_commits)")
    sql.add_argument("query", nargs="?", default=None)
    sql.add_argument("--file", default=None, metavar="FILE.sql", help="run the query in this file (see queries/)")
    sql.add_argument(
        "--param", action="append", default=None, metavar="NAME=VALUE", help="bind :NAME in the query (repeatable)"
    )
    _add_format_option(sql)
    sql.add_argument("--limit", type=int, default=50, help="rows shown in table format")
    sql.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="the query is Spark SQL either way; local (default): a local data dir's tables answered by DuckDB from "
        "their files, no JVM (sqlglot translates the dialect); spark: by Spark SQL (a catalog's tables always are)",
    )
    sql.set_defaults(func=_sql)

    check = sub.add_parser(
        "check", help="run the expectation checks, write alerts, notify; exit 1 when a critical rule fails"
    )
    check.set_defaults(func=_check)

    tables = sub.add_parser("tables", help="list the tables and their columns (no Spark needed)")
    tables.add_argument("name", nargs="?", default=None, help="one table: its columns with types and meaning")
    tables.add_argument("--markdown", action="store_true", help="the column reference of docs/TABLES.md")
    tables.set_defaults(func=_tables)

    capture = sub.add_parser("capture", help="write a dump file from a live cluster")
    capture.add_argument("--bootstrap", default=None, help="HOST:PORT (default: kafka.bootstrap_servers)")
    capture.add_argument("--topic", action="append", required=True, help="topic to capture (repeatable)")
    capture.add_argument("--from", dest="from_time", default=None, help="start time (epoch ms or ISO-8601)")
    capture.add_argument("--to", dest="to_time", default=None, help="end time (epoch ms or ISO-8601)")
    capture.add_argument("--out", required=True, help="dump file to write")
    capture.set_defaults(func=_capture)

    poll = sub.add_parser("poll-groups", help="describe consumer groups on an interval; emit snapshot telemetry")
    poll.add_argument("--bootstrap", default=None, help="HOST:PORT (default: kafka.bootstrap_servers)")
    poll.add_argument("--interval", type=float, default=10.0, metavar="S", help="seconds between polls (default 10)")
    poll.add_argument("--group", action="append", default=None, help="group to describe (repeatable; default: all)")
    poll.add_argument("--topic", default=None, help="telemetry topic (default: the first kafka.telemetry_topics)")
    poll.add_argument("--once", action="store_true", help="poll once and exit")
    poll.set_defaults(func=_poll_groups)

    from rebalance_radar.emitters import log_shipper, protocol_tap

    ship = sub.add_parser("ship-logs", help="tail a broker's log and produce its group-coordinator lines as telemetry")
    log_shipper.add_arguments(ship, bootstrap_required=False)
    ship.set_defaults(func=_ship_logs)

    tap = sub.add_parser("tap", help="a TCP proxy before one broker that mirrors group-protocol calls as telemetry")
    protocol_tap.add_arguments(tap, bootstrap_required=False)
    tap.set_defaults(func=_tap)
    demo = sub.add_parser(
        "demo", help="embedded broker + a fleet of real consumers through an incident script, live; then a report"
    )
    demo.add_argument(
        "--scenario", default="incidents", help="incidents (default), healthy or short (see pipelines/local/scenarios)"
    )
    demo.add_argument("--out", default=None, metavar="FILE.html", help="the report (default: <data dir>/report.html)")
    demo.set_defaults(func=_demo)

    report = sub.add_parser("report", help="an offline HTML report: rebalance timeline and detections per group")
    report.add_argument("--out", required=True, metavar="FILE.html", help="where to write the report")
    report.set_defaults(func=_report)

    repair = sub.add_parser(
        "repair-checkpoint", help="set aside the damaged newest batch of any streaming checkpoint (after a crash)"
    )
    repair.add_argument("--dry-run", action="store_true", help="only say what is damaged (exit 1 if anything is)")
    repair.set_defaults(func=_repair_checkpoint)

    maintain = sub.add_parser("maintain", help="OPTIMIZE (Z-ordered) and VACUUM every existing table")
    maintain.add_argument("--table", action="append", default=None, help="only this table (repeatable)")
    maintain.set_defaults(func=_maintain)

    queries = sub.add_parser("queries", help="list the on-call queries of queries/ with their questions")
    queries.add_argument(
        "--dashboard", action="store_true", help="print the Databricks dashboard (resources/*.lvdash.json) instead"
    )
    queries.set_defaults(func=_queries)
    for command in sub.choices.values():  # `radar replay --input X --data-dir D` works as well as before the command
        _add_global_options(command, dict.fromkeys(GLOBAL_DEFAULTS, argparse.SUPPRESS))
    return parser


QUIET_COMMANDS = frozenset({"decode", "tables", "queries"})
"""Commands that start no library that logs (no JVM, no Kafka client, no Maven): no log file to keep."""


def _keep_library_messages(args: argparse.Namespace) -> None:
    """Third-party messages (librdkafka, py4j, Maven, Spark's workers) go to `<data dir>/logs/radar-<command>.log`,
    named on stderr the first time something is written there (`console.LibraryLog`)."""
    if args.command in QUIET_COMMANDS:
        return
    from rebalance_radar.pipelines.runtime.console import keep_library_messages

    config = _config(args)
    data_dir = config.data_dir / "demo" if args.command == "demo" and not args.data_dir else config.data_dir
    keep_library_messages(data_dir.expanduser(), args.command)


def main(argv: Sequence[str] | None = None) -> int:
    mark("main")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with phase(f"command {args.command}"):
            refuse_read_only_data_dir(args)
            _keep_library_messages(args)
            return int(args.func(args) or 0)
    except (DumpFormatError, ConfigError, FileNotFoundError, ValueError, TimeoutError) as exc:
        print(f"radar {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except RuntimeError as exc:  # our pipeline errors (missing jars, broker start, failed query) are sentences
        print(f"radar {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
