"""The local SparkSession really resolves format('delta') and format('kafka')."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from pipelines.config import RadarConfig
from pipelines.session import verify_formats

pytestmark = pytest.mark.spark


def test_session_settings(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.sql.streaming.stateStore.providerClass").endswith("RocksDBStateStoreProvider")
    assert conf.get("spark.jars")


def test_delta_round_trip(spark: SparkSession, radar_config: RadarConfig) -> None:
    if "delta" not in radar_config.spark.connectors:
        pytest.skip("delta is not among spark.connectors in this configuration")
    path = str(radar_config.data_dir / "tables" / "round_trip")
    spark.createDataFrame([("g1", 1), ("g2", 2)], "group_id string, generation int") \
        .write.format("delta").mode("overwrite").save(path)
    rows = spark.read.format("delta").load(path).orderBy("group_id").collect()
    assert [(row.group_id, row.generation) for row in rows] == [("g1", 1), ("g2", 2)]


def test_kafka_format_resolves(spark: SparkSession, radar_config: RadarConfig) -> None:
    if "kafka" not in radar_config.spark.connectors:
        pytest.skip("kafka is not among spark.connectors in this configuration")
    verify_formats(spark, ("kafka",))
