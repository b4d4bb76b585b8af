"""A header's raw time read in the scan task where the answer is certain to be Spark's (`events.parsed_time`).

Spark reads a `ts` with blanks folded, by the layout's Java pattern, STRICT, in the session's time zone, then
shifted from --timezone. The task reads it only for a layout whose pattern is fixed-width digits and literals
(`yyyy-MM-dd HH:mm:ss,SSS`, ...), a `ts` of exactly that shape in ASCII, a valid date and time of day, a session
and a --timezone of UTC; every other row is left to Spark (another pattern, a year from the bundle, a zone to shift
from, a month 13, a Unicode digit, a tab). The measured rows (measured.py) and the events' file (with_time) read
their times here.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Protocol, TypeAlias

from ..sources.layouts import layout_by_id
from .taskfile import null_where

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

Flags: TypeAlias = "npt.NDArray[np.bool_]"  # one flag per row
Times: TypeAlias = "npt.NDArray[np.datetime64]"  # datetime64[ns] per row, NaT: none
Numbers: TypeAlias = "npt.NDArray[np.int64]"

YEARS = (1700, 2261)  # the years a time is read in (nanoseconds since 1970 in an int64: 1677-2262)
FIELDS = {"yyyy": "year", "MM": "month", "dd": "day", "HH": "hour", "mm": "minute", "ss": "second", "SSS": "milli"}


class Zones(Protocol):
    """How Spark would read the times: the zone of layouts that print local times (--timezone), and whether the
    session's time zone is UTC."""

    @property
    def timezone(self) -> str: ...

    @property
    def session_utc(self) -> bool: ...


def read_times(ts: pa.Array, layout_id: str, spec: Zones) -> tuple[Times, Flags]:
    """(per row, the UTC time Spark's parsed_time gives as datetime64[ns] (NaT: null), the rows whose time is left
    to Spark)."""
    import numpy as np

    n = len(ts)
    none = np.full(n, np.datetime64("NaT", "ns"))
    null = ~ts.is_valid().to_numpy(zero_copy_only=False)  # (Spark: a null ts is a null time, in any layout)
    if layout_id == "none":
        return none, np.zeros(n, dtype=bool)
    layout = layout_by_id(layout_id)
    if not (layout.timed and layout.time_format):  # (parsed_time: no pattern, a null time)
        return none, np.zeros(n, dtype=bool)
    fields = fixed_fields(layout.time_format)
    sure_zone = spec.session_utc and (layout.utc or spec.timezone == "UTC") and not layout.year_from_bundle
    if fields is None or not sure_zone:
        return none, ~null
    time, read = read_fixed(ts, *fields)
    return np.where(read, time, none), ~null & ~read


@cache
def fixed_fields(pattern: str) -> tuple[bytes, tuple[tuple[str, int, int], ...]] | None:
    """A Java datetime pattern of fixed-width fields (FIELDS) and literals as (the literal bytes, with a digit
    placeholder `0` in each field's places; (field, start, width) per field); None for any other pattern."""
    literal, at = bytearray(), 0
    fields: list[tuple[str, int, int]] = []
    for match in re.finditer(r"'([^']*)'|([A-Za-z])\2*|([^A-Za-z'])", pattern):
        quoted, letters, other = match.group(1), match.group(0) if match.group(2) else None, match.group(3)
        if letters is not None:
            if letters not in FIELDS or FIELDS[letters] in {f for f, _, _ in fields}:
                return None
            fields.append((FIELDS[letters], at, len(letters)))
            literal += b"0" * len(letters)
        else:
            text = (quoted if quoted is not None else other or "").encode()
            if not text or any(not 0x20 <= c < 0x7F or chr(c).isdigit() for c in text):
                return None  # ('' is a quote; a digit literal would pass as a field's)
            literal += text
        at = len(literal)
    if {f for f, _, _ in fields} - {"milli"} != set(FIELDS.values()) - {"milli"}:
        return None  # (every field from the year to the second, the milliseconds optional)
    return bytes(literal), tuple(fields)


def read_fixed(ts: pa.Array, literal: bytes, fields: tuple[tuple[str, int, int], ...]) -> tuple[Times, Flags]:
    """(datetime64[ns] per row, whether it was read): rows of exactly the pattern's bytes, digits in its
    fields' places, a valid proleptic Gregorian date and time of day, in the years Arrow's nanoseconds hold (YEARS:
    Spark's INT96 times are read back as nanoseconds)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n, width = len(ts), len(literal)
    out = np.zeros(n, dtype=np.int64)
    ts = ts.cast(pa.large_string())
    length = pc.fill_null(pc.binary_length(ts), -1).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(length == width)
    read = np.zeros(n, dtype=bool)
    if not len(rows):
        return out.view("datetime64[ns]"), read
    offsets = np.frombuffer(ts.buffers()[1], dtype=np.int64)[ts.offset : ts.offset + n + 1]
    data = np.frombuffer(ts.buffers()[2], dtype=np.uint8)
    chars = np.lib.stride_tricks.sliding_window_view(data, width)[offsets[rows]]  # rows x width (a row copied each)
    # each byte less its lowest allowed value, wrapping below it: at most 9 in a field's place (a digit), 0 in a
    # literal's (that byte): one subtraction and one comparison per byte
    low = np.frombuffer(literal, dtype=np.uint8).copy()
    most = np.zeros(width, dtype=np.uint8)
    for _, start, size in fields:
        low[start : start + size], most[start : start + size] = 0x30, 9
    above = chars - low  # (in a field's place: the digit's value)
    ok = np.all(above <= most, axis=1)
    values = {}
    for name, start, size in fields:
        number = np.zeros(len(rows), dtype=np.int64)
        for k in range(size):
            number = number * 10 + above[:, start + k]
        values[name] = number
    year, month, day = values["year"], values["month"], values["day"]
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)[np.clip(month, 0, 12)]
    month_days += leap & (month == 2)
    ok &= (year >= YEARS[0]) & (year <= YEARS[1]) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days)
    ok &= (values["hour"] <= 23) & (values["minute"] <= 59) & (values["second"] <= 59)
    days = _days_from_civil(year, month, day)
    seconds = ((days * 24 + values["hour"]) * 60 + values["minute"]) * 60 + values["second"]
    nanos = seconds * 1_000_000_000 + values.get("milli", 0) * 1_000_000
    out[rows[ok]] = nanos[ok]
    read[rows[ok]] = True
    return out.view("datetime64[ns]"), read


def _days_from_civil(year: Numbers, month: Numbers, day: Numbers) -> Numbers:
    """Days since 1970-01-01 of proleptic Gregorian dates (numpy int64 arrays, year >= 1)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (month > 2) * -3 + (month <= 2) * 9) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: Numbers = era * 146097 + doe - 719468
    return days


def with_time(batch: pa.RecordBatch, layout_id: str, zones: Zones | None) -> pa.RecordBatch:
    """The events' batch with `time` appended: microseconds since 1970 (UTC) where read here, its `ts` then null;
    elsewhere a null time and the raw `ts` kept, which `EventsResult.table` has Spark parse. Without `zones`
    every time is left so (a scan that writes no measured rows). A number, not a Parquet timestamp: Spark
    refuses a timestamp before 1900 from a file another writer wrote."""
    import numpy as np
    import pyarrow as pa

    ts = batch.column("ts")
    if zones is None:
        return batch.append_column("time", pa.nulls(len(ts), pa.int64()))
    times, _ = read_times(ts, layout_id, zones)
    read = ~np.isnat(times)
    micros = pa.array(times.astype("datetime64[us]").view(np.int64), pa.int64(), mask=~read)
    kept = null_where(ts, read)
    return batch.set_column(batch.schema.get_field_index("ts"), "ts", kept).append_column("time", micros)
