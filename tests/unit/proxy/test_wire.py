"""HTTP/1.1 framing (proxy/wire.py): a chunk of a chunked body, whatever its size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from specwatch.proxy import wire


@given(st.one_of(st.integers(0, 2100), st.integers(0, 70_000)))
def test_a_chunk_is_its_size_in_hex_its_bytes_and_a_line_end(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert b"%x\r\n%s\r\n" % (size, data) == wire.chunk(data)


def test_the_looked_up_sizes_end_where_formatting_takes_over() -> None:
    edge = len(wire._SIZE_LINES)
    for size in (0, 1, 15, 16, edge - 1, edge, edge + 1):
        assert b"%x\r\n" % size == wire.chunk(b"a" * size)[: -size - 2 or None]
