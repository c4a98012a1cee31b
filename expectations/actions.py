"""Great Expectations actions of the check suite (imported lazily: `import great_expectations` costs seconds)."""

from __future__ import annotations

import logging
from typing import Literal

from great_expectations.checkpoint.actions import ActionContext, ValidationAction
from great_expectations.checkpoint.checkpoint import CheckpointResult

LOG = logging.getLogger("radar.checks")


class LogFailedExpectationsAction(ValidationAction):
    """Logs one line per failed expectation of a checkpoint run (rule, failing rows); the alert lifecycle and its
    notifications happen after the run, in pipelines/checks/check.py, where the alerts table is known."""

    type: Literal["radar_log_failed_expectations"] = "radar_log_failed_expectations"

    def run(self, checkpoint_result: CheckpointResult, action_context: ActionContext | None = None) -> dict:
        failed = 0
        for validation in checkpoint_result.run_results.values():
            for result in validation.results:
                if result.success:
                    continue
                failed += 1
                rule = result.expectation_config.meta.get("rule", result.expectation_config.type)
                rows = result.result.get("unexpected_count", "?")
                LOG.info("check %s failed on %s row(s)", rule, rows)
        return {"failed_expectations": failed}
