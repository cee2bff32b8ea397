"""What the operator may use of the job besides the shared model (`bridge_job.config`): the contract.

The operator renders what the job runs, then reads what the running job writes (its Lease, its health
ConfigMap, the topics it creates) and checks Kafka as the job will use it. Where the two must agree on a
name, a setting or a protocol, the operator takes it from the job through this package and no other (an
import-linter contract in pyproject.toml holds it), so that the rest of the job stays the job's own.

A change here is a change both sides must agree on. The operator and the job ship in the same release,
but the operator checks what a running job writes, and that job may have been started by the release
before: what it writes must stay readable.

Only re-exports: each name is defined, documented and tested where the job uses it. This module holds
the pure names, which the operator's pure modules may import (no I/O library behind them); `clients.py`
the Kubernetes transport, the Lease protocol and the Kafka client settings.
"""

from __future__ import annotations

from bridge_job.formats.journal import JournalTopicSpec, journal_topic, pending_topic
from bridge_job.formats.subjects import registrations
from bridge_job.kube.ownership import LABEL_BRIDGE_ID
from bridge_job.redaction import redact
from bridge_job.signing import KEY_ENV

# Names one side writes and the other reads: the label on the job's Lease and health ConfigMap (the
# operator watches them by it) and the variable the job reads the bridge's signing key from.
__all__ = ["KEY_ENV", "LABEL_BRIDGE_ID"]
# The topics the job creates (journal, pending requests): the Kafka checks verify them. (The reply topics
# are the model's: `JobConfig.reply_topics`.)
__all__ += ["JournalTopicSpec", "journal_topic", "pending_topic"]
# Redaction: what the operator shows of the job's words is masked as the job masks its own log.
__all__ += ["redact"]
# The schemas the avro and jsonSchema routes register, and their subjects: the Kafka checks register them
# first, as the bridge's principal, to see that the registry takes them.
__all__ += ["registrations"]
