"""Record -> alert's last step: `check` validates the alert rules (expectations/) over the tables with Great
Expectations, keeps the `alerts` rows and notifies (log, webhook, Slack)."""

__all__ = ["check"]
