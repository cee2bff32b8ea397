"""Fixtures of the in-process ingest tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bridge_job.ingest.journalling import Ingest


@pytest.fixture
def running() -> Iterator[list[Ingest]]:
    """The ingests a test started, stopped after it."""
    started: list[Ingest] = []
    yield started
    for ingest in started:
        ingest.stop()
