"""Requests waiting for their answer from a JMS service of the message-id convention.

Such a service answers with the request's JMSMessageID as JMSCorrelationID. The provider assigns that
id at send, so nothing in the request can carry the reply topic back (as `<topic>/<id>` does for the
correlation-id convention, routing/replies.py): the bridge remembers each request instead, in the
compacted topic `<bridgeId>.jms-bridge.pending` (`JobConfig.pending_topic`), keyed by the JMSMessageID,
the value a `PendingRequest` in JSON. Kafka keeps it across restarts and failovers; the in-memory copy
of a process is only a cache.

The ingress writes the entry before it commits the request's JMS transaction, so no answer can come
before its entry. The egress routes the answer to the entry's reply topic with the requester's
correlation id and writes a tombstone for the entry (egress/pending_requests.py says when), so
answered requests leave nothing behind. An answer the journal took after the entry's
deadline is a soft failure (`ReplyExpired`) and tombstones the entry too; an entry never answered is
tombstoned once its deadline is `SWEEP_GRACE_MS` behind, by whichever egress process reads it.

The answer's time is the journal record's timestamp (when the bridge took the answer from JMS), not the
clock when the egress routes it: a replayed batch decides the same, and a lagging egress does not turn
answers that came in time into expired ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from bridge_job.formats import KafkaRecord

# An entry past its deadline by this much is tombstoned unanswered. The margin lets an answer the journal
# took just before the deadline still find its entry when the egress is behind.
SWEEP_GRACE_MS = 10 * 60 * 1000


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """Where the answer to one request goes, and until when it is awaited."""

    reply_topic: str
    correlation_id: str  # the requester's: the answer's key and `jms.JMSCorrelationID`
    deadline_ms: int
    route: str

    def expired(self, answered_ms: int) -> bool:
        return answered_ms > self.deadline_ms


def pending_record(message_id: str, request: PendingRequest) -> KafkaRecord:
    value = {
        "replyTopic": request.reply_topic,
        "correlationId": request.correlation_id,
        "deadlineMs": request.deadline_ms,
        "route": request.route,
    }
    return KafkaRecord(value=json.dumps(value, separators=(",", ":")).encode(), key=message_id.encode())


def tombstone(message_id: str) -> KafkaRecord:
    return KafkaRecord(value=None, key=message_id.encode())


def parse_pending(value: bytes) -> PendingRequest:
    """An entry's value; ValueError when it is not one."""
    try:
        fields = json.loads(value)
        return PendingRequest(
            reply_topic=str(fields["replyTopic"]),
            correlation_id=str(fields["correlationId"]),
            deadline_ms=int(fields["deadlineMs"]),
            route=str(fields["route"]),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"not a pending request: {error}") from None


def pending_route(value: bytes | None) -> str | None:
    """The route that sent a request, whose soft-failure policy applies to its answer."""
    try:
        return None if value is None else parse_pending(value).route
    except ValueError:
        return None


def stale(entries: Mapping[bytes, bytes], now_ms: int) -> list[str]:
    """The message ids of entries past their deadline by more than the grace, or unreadable."""
    found = []
    for key, value in entries.items():
        try:
            request = parse_pending(value)
        except ValueError:
            found.append(key.decode("utf-8", "replace"))
            continue
        if request.expired(now_ms - SWEEP_GRACE_MS):
            found.append(key.decode("utf-8", "replace"))
    return found
