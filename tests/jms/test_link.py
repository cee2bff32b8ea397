"""The ingest's JMS link: redeliveries of a batch whose commit failed come back flagged. How long failing
calls are tolerated is tests/test_outages.py; the reconnection itself runs on real brokers in
tests/e2e/test_faults.py."""

from __future__ import annotations


def test_messages_of_a_batch_whose_commit_failed_come_back_flagged_redelivered() -> None:
    """A restarted broker redelivers them unflagged; egress drops only flagged redeliveries."""
    from bridge_job.jms.link import Uncommitted
    from bridge_job.message import Destination, DestinationKind, JmsMessage

    queue = Destination(DestinationKind.QUEUE, "orders.in")
    batch = [JmsMessage(queue, body=str(i), message_id=f"ID:{i}") for i in range(3)]
    uncommitted = Uncommitted()
    uncommitted.add(batch[:2])
    again = uncommitted.flag(batch)
    assert [m.redelivered for m in again] == [True, True, False]
    assert [m.redelivered for m in uncommitted.flag(batch)] == [False, False, False]  # flagged once
