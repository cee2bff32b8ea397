"""The Kafka adapter (confluent-kafka): client settings, reading and writing ranges, record size limits,
and waiting out a Kafka that does not answer.
"""
