"""The check suite on Great Expectations 1.x: an ephemeral context, a pandas dataframe data source, one
ExpectationSuite built from `expectations.rules`, one ValidationDefinition and one Checkpoint (with its actions)
per check run. Failing rows come back through GX's `unexpected_index_list` keyed by `INDEX_COLUMNS`, so each
failure names its group. Never imports pipelines/.

Why pandas: the check view is a row per group and one per cluster, already collected by the time it is validated.
On Spark, GX computed every metric as Spark jobs: 1.2 s warm and alone, seconds more beside a live run, every
`checks.interval_s`, on the cores the live detection micro-batches need. On pandas it is Python on a few rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_radar.expectations.rules import CHECK_VIEW, INDEX_COLUMNS, CheckRule


@dataclass(frozen=True)
class FailingRow:
    """One row of the check view that broke one rule: its index columns and the rule's column."""

    rule: str
    values: dict[str, Any]


@dataclass(frozen=True)
class SuiteOutcome:
    """What the checkpoint found: failing rows, the rules whose expectation ran, and those that raised (by rule)."""

    failing: tuple[FailingRow, ...]
    evaluated: tuple[str, ...]
    errors: dict[str, str] = field(default_factory=dict)


def run_suite(
    rows: Sequence[Mapping[str, Any]], rules: Sequence[CheckRule], run_name: str = "radar-check"
) -> SuiteOutcome:
    """Validate the check view's `rows` (`CHECK_VIEW`'s columns) against `rules`, all in one validation of one
    checkpoint."""
    import great_expectations as gx
    import pandas as pd
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    from rebalance_radar.expectations.actions import LogFailedExpectationsAction

    # no Data Docs site: the default ephemeral context makes a temporary folder for one on every run
    in_memory = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False))
    context = gx.get_context(mode="ephemeral", project_config=in_memory)
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    batch = (
        context.data_sources.add_pandas("radar")
        .add_dataframe_asset(CHECK_VIEW.name)
        .add_batch_definition_whole_dataframe("check_run")
    )
    expectations = [gx.expectations.ExpectColumnValuesToBeBetween(**rule.expectation_kwargs()) for rule in rules]
    suite = context.suites.add(gx.ExpectationSuite(name="radar_alert_rules", expectations=expectations))
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="radar_check_view", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(
            name="radar_checks",
            validation_definitions=[validation],
            actions=[LogFailedExpectationsAction(name="log_failed_expectations")],
            result_format={"result_format": "COMPLETE", "unexpected_index_column_names": list(INDEX_COLUMNS)},
        )
    )
    dataframe = pd.DataFrame([{c: row.get(c) for c in CHECK_VIEW.column_names} for row in rows],
                             columns=list(CHECK_VIEW.column_names))  # fmt: skip
    result = checkpoint.run(batch_parameters={"dataframe": dataframe}, run_id=RunIdentifier(run_name=run_name))
    failing: list[FailingRow] = []
    evaluated: list[str] = []
    errors: dict[str, str] = {}
    for validation_result in result.run_results.values():
        for expectation in validation_result.results:
            rule = str(expectation.expectation_config.meta["rule"])
            message = _raised(expectation.exception_info or {})
            if message is not None:
                errors[rule] = message
                continue
            evaluated.append(rule)
            if expectation.success:
                continue
            failing += [
                FailingRow(rule, {k: None if _missing(v) else v for k, v in row.items()})
                for row in expectation.result.get("unexpected_index_list") or ()
            ]
    return SuiteOutcome(tuple(failing), tuple(evaluated), errors)


def _raised(info: dict[str, Any]) -> str | None:
    """The exception message of a failed metric computation, if any: GX gives either one exception_info, or one
    per metric id."""
    infos = [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, dict)]
    for one in infos:
        if one.get("raised_exception"):
            return str(one.get("exception_message") or "the expectation raised")
    return None


def _missing(value: Any) -> bool:
    """pandas' null in a failing row (NaN where the view holds None, e.g. a cluster-wide row's group_id)."""
    import pandas as pd

    return bool(pd.api.types.is_scalar(value) and pd.isna(value))
