"""Ingest partitions (ingest/assignment.py): which partition takes which JMS source."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_job.config import JmsSource
from bridge_job.formats.journal import journal_partition
from bridge_job.ingest.assignment import ingest_partitions, source_destination
from bridge_job.message import JmsMessage
from tests.support.examples import examples

names = st.text(st.characters(categories=("L", "N"), include_characters=".-_"), min_size=1, max_size=20)
queues = st.lists(names, unique=True, max_size=12).map(lambda ns: [JmsSource(queue=n) for n in ns])


def topic(name: str) -> JmsSource:
    return JmsSource(topic=name, durable_subscription=f"sub-{name}")


@given(queues, st.integers(min_value=1, max_value=16))
@settings(max_examples=examples(200))
def test_a_queue_goes_to_the_partition_its_messages_are_journalled_to(
    sources: list[JmsSource], partitions: int
) -> None:
    assigned = ingest_partitions(sources, partitions)
    assert sorted(s.address for part in assigned.values() for s in part) == sorted(s.address for s in sources)
    for p, part in assigned.items():
        assert part, "a partition without sources gets no producer"
        for source in part:
            assert journal_partition(JmsMessage(source_destination(source)), partitions) == p


@given(queues, names, st.integers(min_value=1, max_value=16))
@settings(max_examples=examples(100))
def test_adding_a_source_moves_no_other(sources: list[JmsSource], added: str, partitions: int) -> None:
    before = ingest_partitions(sources, partitions)
    after = ingest_partitions([*sources, JmsSource(queue=f"{added}-new")], partitions)
    for p, part in before.items():
        assert [s.address for s in after[p] if s in part] == [s.address for s in part]


def test_every_durable_subscription_goes_with_the_first_topic_in_name_order() -> None:
    """They all belong to the bridge's one JMS client id, which a broker gives one connection at a time."""
    sources = [topic("zeta"), JmsSource(queue="orders"), topic("alpha"), topic("mid")]
    assigned = ingest_partitions(sources, 8)
    (holder,) = [p for p, part in assigned.items() if any(s.topic for s in part)]
    assert holder == journal_partition(JmsMessage(source_destination(topic("alpha"))), 8)
    assert [s.address for s in assigned[holder] if s.topic] == ["zeta", "alpha", "mid"]  # as given


def test_one_partition_takes_everything() -> None:
    sources = [JmsSource(queue="a"), topic("t"), JmsSource(queue="b")]
    assert ingest_partitions(sources, 1) == {0: sources}
