"""Packed headers round-trip exactly and refuse a truncated blob."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge_job.header_blob import pack_headers, unpack_headers


@given(st.lists(st.tuples(st.text(max_size=40), st.binary(max_size=300)), max_size=30))
def test_round_trip_keeps_order_and_repeats(headers: list[tuple[str, bytes]]) -> None:
    assert unpack_headers(pack_headers(headers)) == headers


def test_truncated_blob_is_an_error() -> None:
    blob = pack_headers([("jms.JMSType", b"order")])
    with pytest.raises(ValueError, match="truncated"):
        unpack_headers(blob[:-2])
