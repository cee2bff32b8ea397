"""The Kafka adapter (confluent-kafka), the job's one door to Kafka: client settings, topics (topics.py),
reading ranges and offsets (reading.py, following.py), writing them in either delivery mode (writing.py,
transactions.py), record size limits, and waiting out a Kafka that does not answer (waiting.py).

No other room of the job imports confluent_kafka (an import-linter contract in pyproject.toml holds it):
what they hold of it (a `Consumer`, a `TopicPartition`) they get from here.
"""
