"""What one benchmark run of the bridge sets up: the local brokers, a work dir, the bridge's document.

`local_brokers()` starts ActiveMQ Classic (persistent store) and noida-db on free ports and a work dir
for the job's files; on the way out it stops both and removes the work dir, unless the run failed (then
it says where the job's files are kept). `bridge_document()` is the tests' harness document with the
bridge's own trigger interval (the harness sets 100 ms for the tests) unless the benchmark asks for one.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jmsbridge.local import ActiveMqBroker, KafkaBroker
from tests.support import harness


@contextmanager
def local_brokers(note: Callable[[str], None]) -> Iterator[tuple[ActiveMqBroker, KafkaBroker, Path]]:
    work = Path(tempfile.mkdtemp(prefix="jmsbridge-bench-"))
    activemq, kafka = ActiveMqBroker(), KafkaBroker()
    ok = False
    try:
        activemq.start()
        kafka.start()
        note(f"brokers up: ActiveMQ {activemq.url}, noida-db {kafka.bootstrap}; work dir {work}")
        yield activemq, kafka, work
        ok = True
    finally:
        activemq.cleanup()
        kafka.cleanup()
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            note(f"failed: the job's files are kept in {work}")


def bridge_document(
    name: str,
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    sources: list[dict[str, Any]],
    trigger_ms: int | None,
    **spec: Any,
) -> dict[str, Any]:
    document = harness.bridge_document(name, activemq, kafka, sources, **spec)
    document["spec"]["spark"].pop("triggerIntervalMs", None)
    if trigger_ms is not None:
        document["spec"]["spark"]["triggerIntervalMs"] = trigger_ms
    return document
