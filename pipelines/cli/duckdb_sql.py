"""Spark SQL for DuckDB: `radar sql` takes one dialect, Spark SQL (what `queries/` are written in and what Databricks
runs), and answers a local data dir with DuckDB, no JVM. sqlglot translates the dialect differences: `explode` and
`LATERAL VIEW` to `UNNEST`, `get_json_object` to JSON paths, `first(x, true)`, Spark's NULL ordering, backquotes."""

from __future__ import annotations

from rebalance_radar.pipelines.config import ConfigError


def duckdb_sql(spark_sql: str) -> str:
    """The statement in DuckDB's dialect; a statement Spark SQL could not parse is one sentence."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError, UnsupportedError

    try:
        statements = sqlglot.transpile(
            spark_sql, read="spark", write="duckdb", unsupported_level=sqlglot.ErrorLevel.RAISE
        )
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        near = f' near "{detail["highlight"]}"' if detail.get("highlight") else ""
        where = f" (line {detail['line']}, column {detail['col']})" if detail.get("line") else ""
        raise ConfigError(
            f"The SQL does not parse{near}{where}: fix it there, or run it as it is with --engine spark."
        ) from None
    except TokenError as error:
        reason = str(error.__cause__ or error).splitlines()[0]  # e.g. "Missing ' from 1:38": an unclosed quote
        raise ConfigError(
            f"The SQL does not parse ({reason}): close the quote or bracket, or run it as it is with --engine spark."
        ) from None
    except UnsupportedError as error:
        raise ConfigError(
            f"DuckDB has no equivalent of part of this Spark SQL ({str(error).splitlines()[0]}): run it with "
            "--engine spark."
        ) from None
    if len(statements) != 1:
        raise ConfigError(f"radar sql runs one statement; this text holds {len(statements)}: run them one by one.")
    return statements[0]
