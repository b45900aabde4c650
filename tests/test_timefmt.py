import pytest

from graphlake.ingest.timefmt import TimeFormatError, parse_clock, parse_range


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
