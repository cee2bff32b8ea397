"""Kafka offsets as Spark checkpoints them, and how the next batch's ranges are planned.

Offsets are `{key: next offset}` maps with string keys (Spark stores them as JSON): a journal partition
number for the egress, `topic:partition` for the ingress. Pure: no Kafka, no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping

Offsets = dict[str, int]


def plan_batch(start: Mapping[str, int], latest: Mapping[str, int], max_records: int | None) -> Offsets:
    """The end offsets of the next batch: everything up to `latest`, at most `max_records` in all.

    The budget is shared fairly: each partition with records gets an equal share, and what a partition
    cannot use goes to the others, so one busy partition never starves the rest.
    """
    end = {p: max(start.get(p, 0), 0) for p in latest}
    available = {p: latest[p] - end[p] for p in latest if latest[p] > end[p]}
    if max_records is None:
        return {p: max(end[p], latest[p]) for p in latest}
    budget = max_records
    while budget > 0 and available:
        share = max(budget // len(available), 1)
        for p in sorted(available):
            take = min(share, available[p], budget)
            end[p] += take
            available[p] -= take
            budget -= take
            if budget == 0:
                break
        available = {p: n for p, n in available.items() if n > 0}
    return end


def records_between(start: Mapping[str, int], end: Mapping[str, int]) -> int:
    return sum(max(end[p] - start.get(p, 0), 0) for p in end)
