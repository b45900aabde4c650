import re

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphlake.ingest.timefmt import TimeFormatError, clock_ranges, parse_clock, parse_range


@pytest.mark.parametrize(
    "text,expected",
    [
        ("00:00:00", 0.0),
        ("00:04:10", 250.0),
        ("01:02:03", 3723.0),
        ("02:03", 123.0),
        (" 00:00:01.5 ", 1.5),
        ("10:00:00", 36000.0),
        ("123:00:00", 442800.0),
    ],
)
def test_parse_clock(text, expected):
    assert parse_clock(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("00:01:00-00:02:30", (60.0, 150.0)),
        ("00:01:00 - 00:02:30", (60.0, 150.0)),
        ("00:01:00\u201300:02:30", (60.0, 150.0)),  # en dash
        ("00:05:00-00:05:00", (300.0, 300.0)),
    ],
)
def test_parse_range(text, expected):
    assert parse_range(text) == expected


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("00:61:00-00:62:00", "past 59"),
        ("00:02:00-00:01:00", "ends before it starts"),
        ("yesterday", "not a time range"),
        ("00:01:00", "not a time range"),
        ("aa:bb:cc-00:01:00", "not a clock time"),
        (None, "expected a time range"),
        (60, "expected a time range"),
    ],
)
def test_parse_range_errors_say_what_to_write(text, fragment):
    with pytest.raises(TimeFormatError, match=fragment):
        parse_range(text)


_EXACT = re.compile(r"(\d\d):([0-5]\d):([0-5]\d)-(\d\d):([0-5]\d):([0-5]\d)", re.ASCII)
_RANGE_LIKE = st.lists(st.sampled_from("0123456789:-5 x\u0663\u2013"), min_size=15, max_size=19)


def _exact(text):
    """The paper's exact shape, parsed one text at a time ((None, None): any other text)."""
    if text is None or not _EXACT.fullmatch(text):
        return None, None
    try:
        return parse_range(text)
    except TimeFormatError:  # backwards
        return None, None


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.builds("".join, _RANGE_LIKE),
            st.tuples(*[st.integers(0, 99)] * 6).map(
                lambda t: "{:02d}:{:02d}:{:02d}-{:02d}:{:02d}:{:02d}".format(*t)
            ),
        ),
        max_size=40,
    ),
    st.integers(0, 3),
)
def test_clock_ranges_parses_the_exact_shape_as_parse_range_does_and_nothing_else(texts, skip):
    """The bulk readers' whole-array parse takes exactly the texts of the shape
    HH:MM:SS-HH:MM:SS that run forward, with parse_range's seconds; everything else is null
    (those files go to the record parser). A sliced array reads from its own offset."""
    arr = pa.array([None] * skip + texts, pa.string()).slice(skip)
    start, end = clock_ranges(arr)
    got = list(zip(start.to_pylist(), end.to_pylist(), strict=True))
    want = [_exact(t) for t in texts]
    assert got == want
