"""Kafka checks: each bridge's topics, groups and permissions, before its applications start and while
they run (docs/kafka-checks.md).

The operator's handlers use them through `handlers/kafka_checks.py`: its `KafkaChecks`, whose `gate` the
reconciler asks and whose `run` is each bridge's kopf daemon, which says when each bridge is checked, with
the credentials from its Secret, and what follows. Here, in the order a check flows:

- `evaluation`: what a bridge needs from Kafka, and the verdict on what the broker answered (pure);
- `probe`: asks the cluster, as the bridge's own principal (confluent-kafka);
- `gate`: the latest verdict of each bridge, as the reconciler sees it (`GateVerdict`; pure);
- `material`, `mounted_files`: the bridge's credentials and TLS files as its check uses them.

This package's own import loads none of them (the pure `planning` and `status` import `gate`), and
import-linter keeps `evaluation` and `gate` free of I/O libraries.
"""
