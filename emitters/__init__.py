"""What users run beside their brokers and consumers: the radar agent (`emitters.agent`), the group poller, the
Kafka wire client it needs for streams groups, the broker-log shipper and the protocol tap.

They share one bounded telemetry producer (`emitters.telemetry_producer`) and one builder of librdkafka settings
(`emitters.kafka_settings`), and import only confluent-kafka, pydantic and the pure `transforms` package — never
Spark, Delta, Great Expectations or `pipelines` — so the agent installs and runs inside a consumer application.
"""
