"""What a checkpoint's offsets index: the topics they were read from, bound to the checkpoint.

Spark checkpoints a query's offsets as `{"0": 24}` and nothing says of which topic: a journal deleted and
created again, or a source topic recreated, would be read as if it were the old one (offsets taken as
done, records skipped, JMS messages acknowledged and never delivered). So every checkpoint directory holds
a binding file, `<checkpoint>/jmsbridge-binding.json`, next to Spark's own, written by the query's driver
side; per topic:

- the Kafka topic ID, when the broker gives one (a broker that answers with the null UUID: then none);
- per partition, the fingerprint of one record the bridge has passed: its offset, timestamp and a CRC of
  key and value. A recreated topic holds another record at that offset, or none. It is taken again at
  most once a minute after a batch commits (`REFRESH_SECONDS`), from the partition's low watermark, so
  that retention seldom leaves it behind.

Why a file beside Spark's offsets and not inside them: the offsets keep their shape (`{key: int}`, which
every planner and the progress reports read), and the runner can check the binding against the topics
before the ingest takes a single JMS message, without Spark. The check (`verify`) runs when the job
starts, before the ingest, and when a query starts; every planning checks that the offsets lie within
each partition's [low watermark, high watermark] (`out_of_range`). Beyond the high watermark is a
mismatch; below the low one, records lost to retention (`spark.onDataLoss`).

A mismatch stops the bridge (`BridgeStopped`) with one line naming the bridge, the topic, the checkpoint,
what was found and what was expected, and the reset command (`jmsbridge reset-checkpoint`), which moves
the checkpoint aside and writes a start position (`START_FILE`) that the next query begins from.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge_job.kafka.reading import Consumer, TopicPartition, committed_offsets, first_record, watermarks
from bridge_job.kafka.topics import partitions_of, topic_ids
from bridge_job.spark.offsets import Offsets

BINDING_FILE = "jmsbridge-binding.json"
START_FILE = "jmsbridge-start.json"  # where a query begins that has no offsets yet (a reset)
LOST_FILE = "jmsbridge-lost.json"  # records lost to retention and skipped (spark.onDataLoss: skip)
REFRESH_SECONDS = 60.0

Fingerprint = tuple[int, int, int]  # offset, timestamp, crc32 of key and value
Locate = Callable[[str], "tuple[str, int] | None"]  # offsets key -> (topic, partition); None: no partition


@dataclass
class TopicBinding:
    topic_id: str | None = None
    records: dict[int, Fingerprint] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicState:
    """What the broker holds now for one topic."""

    exists: bool
    topic_id: str | None = None
    low: Mapping[int, int] = field(default_factory=dict)
    high: Mapping[int, int] = field(default_factory=dict)
    records: Mapping[int, Fingerprint | None] = field(default_factory=dict)  # at the bound offsets


@dataclass(frozen=True)
class Mismatch:
    topic: str
    found: str
    expected: str
    lost: int = 0  # records below the low watermark: gone to retention, not another topic


def by_topic(offsets: Mapping[str, int], locate: Locate) -> dict[str, dict[int, int]]:
    topics: dict[str, dict[int, int]] = {}
    for k, offset in offsets.items():
        where = locate(k)
        if where is not None:
            topics.setdefault(where[0], {})[where[1]] = offset
    return topics


def out_of_range(
    topic: str, offsets: Mapping[int, int], low: Mapping[int, int], high: Mapping[int, int]
) -> Mismatch | None:
    """Offsets beyond a partition's high watermark (another topic), or below its low one (lost)."""
    ahead = {p: o for p, o in offsets.items() if p in high and o > high[p]}
    if ahead:
        found = ", ".join(f"partition {p} ends at {high[p]}" for p in sorted(ahead))
        expected = ", ".join(f"partition {p} at {o} or beyond" for p, o in sorted(ahead.items()))
        return Mismatch(topic, found, expected)
    gone = [p for p in offsets if p not in high]
    if gone and high:
        return Mismatch(topic, f"{len(high)} partitions", f"partition {max(gone)}")
    behind = {p: o for p, o in offsets.items() if p in low and o < low[p]}
    if behind:
        found = ", ".join(f"partition {p} starts at {low[p]}" for p in sorted(behind))
        expected = ", ".join(f"offsets {o}..{low[p] - 1} of partition {p}" for p, o in sorted(behind.items()))
        count = sum(low[p] - o for p, o in behind.items())
        return Mismatch(topic, found, expected + " still unread", lost=count)
    return None


def check_topic(
    topic: str, bound: TopicBinding | None, offsets: Mapping[int, int], state: TopicState
) -> Mismatch | None:
    """Pure: whether the checkpoint's offsets for `topic` and its binding fit what the broker holds."""
    if not state.exists:
        return Mismatch(topic, "no such topic", f"the topic the checkpoint read up to {dict(offsets)}")
    if bound is not None and bound.topic_id and state.topic_id and bound.topic_id != state.topic_id:
        return Mismatch(topic, f"topic id {state.topic_id}", f"topic id {bound.topic_id}")
    in_range = out_of_range(topic, offsets, state.low, state.high)
    if in_range is not None and not in_range.lost:
        return in_range  # another topic: the plainest thing to say about it
    for p, expected in sorted((bound.records if bound is not None else {}).items()):
        if p not in state.high or expected[0] < state.low.get(p, 0):
            continue  # gone to retention since: nothing to compare (the range check still holds)
        found = state.records.get(p)
        if found != expected:
            what = "no record" if found is None else f"record {list(found)}"
            return Mismatch(
                topic,
                f"{what} at partition {p} offset {expected[0]}",
                f"record {list(expected)} (offset, timestamp, crc) the bridge read there",
            )
    return in_range


def describe(mismatch: Mismatch, bridge_id: str, checkpoint: Path, config_hint: str = "bridge.yaml") -> str:
    """The one line a mismatch stops the bridge with."""
    if mismatch.lost:
        return (
            f"bridge {bridge_id}: topic {mismatch.topic} lost records before the bridge read them "
            f"(found {mismatch.found}, expected {mismatch.expected}; checkpoint {checkpoint}): raise its "
            "retention, or set spark.onDataLoss: skip to count the loss and go on"
        )
    return (
        f"bridge {bridge_id}: checkpoint mismatch on topic {mismatch.topic}: checkpoint {checkpoint} was "
        f"taken on another topic, or the broker lost records it had acknowledged (found {mismatch.found}, "
        f"expected {mismatch.expected}); nothing was read: if the topic was recreated or lost records, run "
        f"`jmsbridge reset-checkpoint -f {config_hint} --checkpoint {checkpoint} --to "
        "earliest|committed|latest`"
    )


# --- files ---------------------------------------------------------------------------------------------


def write_json(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(document, sort_keys=True))
    os.replace(temporary, path)


def load_binding(checkpoint: Path) -> dict[str, TopicBinding] | None:
    path = checkpoint / BINDING_FILE
    if not path.exists():
        return None
    document = json.loads(path.read_text())
    return {
        topic: TopicBinding(
            entry.get("topicId"),
            {int(p): (int(r[0]), int(r[1]), int(r[2])) for p, r in entry.get("records", {}).items()},
        )
        for topic, entry in document["topics"].items()
    }


def save_binding(checkpoint: Path, topics: Mapping[str, TopicBinding]) -> None:
    document = {
        "topics": {
            t: {"topicId": b.topic_id, "records": {str(p): list(r) for p, r in sorted(b.records.items())}}
            for t, b in sorted(topics.items())
        }
    }
    write_json(checkpoint / BINDING_FILE, document)


def spark_offsets(checkpoint: Path) -> Offsets | None:
    """The offsets of the query's last planned batch, from Spark's offset log; None before the first."""
    log = checkpoint / "offsets"
    batches = [int(f.name) for f in log.iterdir() if f.name.isdigit()] if log.is_dir() else []
    if not batches:
        return None
    lines = (log / str(max(batches))).read_text().splitlines()
    if len(lines) < 3 or lines[2] == "-":
        return None
    offsets: Offsets = {k: int(v) for k, v in json.loads(lines[2]).items()}
    return offsets


def load_start(checkpoint: Path) -> Offsets | None:
    path = checkpoint / START_FILE
    if not path.exists():
        return None
    return {k: int(v) for k, v in json.loads(path.read_text()).items()}


def save_start(checkpoint: Path, offsets: Mapping[str, int]) -> None:
    write_json(checkpoint / START_FILE, dict(offsets))


def count_lost(checkpoint: Path, topic: str, start: Mapping[int, int], low: Mapping[int, int]) -> int:
    """Records of `topic` below its low watermarks that the query had not read (gone to retention), added
    to the checkpoint's tally once however often the same batch is planned; the number added."""
    path = checkpoint / LOST_FILE
    document = json.loads(path.read_text()) if path.exists() else {}
    entry = document.setdefault(topic, {"total": 0, "upTo": {}})
    added = 0
    for p, offset in start.items():
        if p in low and offset < low[p]:
            begin = max(offset, int(entry["upTo"].get(str(p), offset)))
            if low[p] > begin:
                added += low[p] - begin
                entry["upTo"][str(p)] = low[p]
    if added:
        entry["total"] += added
        write_json(path, document)
    return added


def lost_totals(checkpoint: Path) -> dict[str, int]:
    """The checkpoint's tally of records lost and skipped, per topic."""
    path = checkpoint / LOST_FILE
    document = json.loads(path.read_text()) if path.exists() else {}
    return {topic: int(entry["total"]) for topic, entry in document.items()}


# --- the broker ----------------------------------------------------------------------------------------


def read_fingerprint(consumer: Consumer, topic: str, partition: int, offset: int) -> Fingerprint | None:
    """The first record at or after `offset` (transaction markers are no records), or None."""
    found = first_record(consumer, topic, partition, offset)
    if found is None:
        return None
    at, timestamp_ms, key, value = found
    return (at, timestamp_ms, zlib.crc32(value, zlib.crc32(key)))


def topic_state(consumer: Consumer, topic: str, bound: TopicBinding | None) -> TopicState:
    partitions = partitions_of(consumer, topic)
    if partitions is None:
        return TopicState(exists=False)
    low: dict[int, int] = {}
    high: dict[int, int] = {}
    for p in partitions:
        low[p], high[p] = watermarks(consumer, topic, p)
    records: dict[int, Fingerprint | None] = {}
    for p, (offset, _, _) in (bound.records if bound is not None else {}).items():
        if p in high and low[p] <= offset < high[p]:
            records[p] = read_fingerprint(consumer, topic, p, offset)
        elif p in high:
            records[p] = None
    return TopicState(True, None, low, high, records)


def with_committed(
    settings: Mapping[str, Any], offsets: Offsets, locate: Locate, timeout: float = 30
) -> Offsets:
    """`offsets`, moved on to what the group of the consumer `settings` committed where it is further: in
    real-time mode the tasks commit their progress there (spark/intervals.py), and Spark's offsets say
    where an interval began. Offsets of a transaction still open do not count (kafka/reading.py)."""
    where = {k: w for k in offsets if (w := locate(k)) is not None}
    if not where:
        return dict(offsets)
    found = committed_offsets(settings, [TopicPartition(*w) for w in where.values()], timeout)
    committed = {(c.topic, c.partition): c.offset for c in found}
    return {k: max(o, committed.get(where[k], o)) if k in where else o for k, o in offsets.items()}


def verify(
    consumer: Consumer, settings: Mapping[str, Any], checkpoint: Path, locate: Locate, committed: bool = False
) -> list[Mismatch]:
    """Where the checkpoint's last offsets (moved on to the group's committed offsets when `committed`)
    and its binding do not fit the topics as they are now."""
    offsets = spark_offsets(checkpoint)
    binding = load_binding(checkpoint) or {}
    if offsets is None:
        return []
    if committed:
        offsets = with_committed(settings, offsets, locate)
    found: list[Mismatch] = []
    per_topic = by_topic(offsets, locate)
    ids = topic_ids(settings, [t for t in per_topic if binding.get(t) and binding[t].topic_id])
    for topic, partitions in sorted(per_topic.items()):
        bound = binding.get(topic)
        state = topic_state(consumer, topic, bound)
        state = TopicState(state.exists, ids.get(topic), state.low, state.high, state.records)
        mismatch = check_topic(topic, bound, partitions, state)
        if mismatch is not None:
            found.append(mismatch)
    return found


def fingerprint_all(
    consumer: Consumer, settings: Mapping[str, Any], offsets: Mapping[str, int], locate: Locate
) -> dict[str, TopicBinding]:
    """A binding for the topics `offsets` reads: their IDs, and one record each partition has passed."""
    per_topic = by_topic(offsets, locate)
    ids = topic_ids(settings, per_topic)
    topics: dict[str, TopicBinding] = {}
    for topic, partitions in per_topic.items():
        binding = TopicBinding(ids.get(topic))
        for p, end in partitions.items():
            low, _ = watermarks(consumer, topic, p)
            if end > low:
                found = read_fingerprint(consumer, topic, p, low)
                if found is not None and found[0] < end:
                    binding.records[p] = found
        topics[topic] = binding
    return topics


def with_known_ids(taken: Mapping[str, TopicBinding], earlier: Mapping[str, TopicBinding]) -> None:
    """Keep a topic's bound id where the broker gave none this time: a describe that timed out during an
    outage must not unbind it (a topic recreated since could then be taken for the one the bridge read)."""
    for topic, found in taken.items():
        before = earlier.get(topic)
        if found.topic_id is None and before is not None:
            found.topic_id = before.topic_id


def committed_beyond(consumer: Consumer, settings: Mapping[str, Any], topic: str) -> Mismatch | None:
    """`exactlyOnce`: offsets the journal reader group (of the consumer `settings`) committed beyond the
    journal's end (kept from a journal deleted since), which would make the egress skip the new journal's
    records as written."""
    group = str(settings["group.id"])
    found = partitions_of(consumer, topic)
    if found is None:
        return None
    partitions = [TopicPartition(topic, p) for p in found]
    for committed in committed_offsets(settings, partitions, 30):
        _, high = watermarks(consumer, topic, committed.partition)
        if committed.offset > high:
            return Mismatch(
                topic,
                f"partition {committed.partition} ends at {high}",
                f"reader group {group} committed at {committed.offset}",
            )
    return None
