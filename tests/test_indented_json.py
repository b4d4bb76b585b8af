"""The JSON view's encoder (views/indented.py) writes `json.dumps(node, indent=2, ensure_ascii=False)`'s very text,
or fails as it fails, on any value a report could hold and on hostile ones: NaN and the infinities, -0.0, floats
whose repr has an exponent, integers past 64 bits, lone surrogates, control and C1 characters, keys that are not
strings, subclasses of str, int, float, list, tuple and dict, a list subclass that makes its items as they are
read (the report's jobs), and types json has no text for. Its fast path (json's C encoder, a flat container at a
time) is what writes a report's plain data: the reference encoder is not called for it."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict, namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flinkdoctor.views import indented
from flinkdoctor.views.indented import indented_pieces


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


class Level(enum.IntEnum):
    WARN = 2


class Made(list):  # type: ignore[type-arg]
    """A list as contract.OneAtATime is: empty underneath, its items made as they are read."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__()
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Any:
        return iter(list(self._items))


Pair = namedtuple("Pair", "left right")

HOSTILE_TEXT = st.text(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),  # any code point
        st.characters(categories=["Cs"]),  # lone surrogates
        st.sampled_from('\x00\x1f\x7f\x85\x9b\u2028\u2029\u202e\ufeff\ud800\udfff"\\\n\r\t\b\f/'),
    ),
    max_size=12,
)
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, 10000.0]),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    FLOATS,
    HOSTILE_TEXT,
    HOSTILE_TEXT.map(Text),
    st.integers().map(Number),
    FLOATS.map(Real),
    st.just(Level.WARN),
)
KEYS = st.one_of(HOSTILE_TEXT, st.integers(), FLOATS, st.booleans(), st.none(), HOSTILE_TEXT.map(Text))


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=5).map(tuple),
        st.lists(inner, max_size=5).map(Made),
        st.tuples(inner, inner).map(lambda pair: Pair(*pair)),
        st.dictionaries(HOSTILE_TEXT, inner, max_size=5),
        st.dictionaries(KEYS, inner, max_size=5),
        st.dictionaries(HOSTILE_TEXT, inner, max_size=5).map(OrderedDict),
    )


VALUES = st.recursive(LEAVES, _containers, max_leaves=40)


def _outcome(make: Any) -> tuple[str, Any]:
    try:
        return "text", make()
    except (TypeError, ValueError) as failed:
        return "raised", type(failed)


def _same_as_json(node: Any, batch: int) -> None:
    expected = _outcome(lambda: json.dumps(node, indent=2, ensure_ascii=False))
    got = _outcome(lambda: "".join(indented_pieces(node, batch)))
    if expected[0] == "text" and isinstance(expected[1], str) and isinstance(got[1], str):
        assert got[1].encode("utf-8", "surrogatepass") == expected[1].encode("utf-8", "surrogatepass")
    assert got == expected


@settings(max_examples=600, deadline=None)
@given(VALUES, st.integers(min_value=1, max_value=64))
def test_the_encoder_writes_jsons_very_text_for_any_value(node, batch):
    _same_as_json(node, batch)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(HOSTILE_TEXT, LEAVES, max_size=8), max_size=6), st.integers(0, 4))
def test_flat_containers_at_every_depth_are_jsons_text(items, depth):
    node: Any = items
    for _ in range(depth):
        node = {"jobs": node, "n": 1.5}
    _same_as_json(node, 3)


@pytest.mark.parametrize(
    "node",
    [
        {(1, 2): "a tuple key"},  # json: TypeError
        {"a": [{(1,): 1}]},
        {"a": object()},  # no text for it (json's default)
        [1, {"b": {1, 2}}],
    ],
)
def test_what_json_refuses_the_encoder_refuses(node):
    _same_as_json(node, 2)


def test_a_circular_reference_fails_as_in_json():
    loop: list[Any] = [1]
    loop.append({"again": loop})
    with pytest.raises(ValueError, match="Circular reference"):
        for n, _ in enumerate(indented_pieces(loop, 8)):
            assert n < 1000, "the loop is written on and on"


def test_a_reports_plain_data_is_written_by_the_c_encoder(monkeypatch):
    """The fast path is taken: plain values (every one a report holds) never reach the reference encoder, whose
    pure-Python indenting was the cost; a subclass does, and is written as json writes it."""

    class Refused(json.JSONEncoder):
        def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
            raise AssertionError(f"the reference encoder wrote {o!r}")

    plain = {
        "jobs": Made([{"job": "a", "series": [{"id": 3, "ms": 32.0}], "none": None, "ok": True, "n": 7}] * 3),
        "timings": {"total_s": 1.25},
        "nested": [[[]], {}, [{}], ["\ud800", math.nan]],
    }
    expected = json.dumps(plain, indent=2, ensure_ascii=False)
    monkeypatch.setattr(indented, "_REFERENCE", Refused(indent=2, ensure_ascii=False))
    assert "".join(indented_pieces(plain, 2)) == expected
    with pytest.raises(AssertionError, match="reference encoder"):
        "".join(indented_pieces({"level": Level.WARN}))


def test_a_list_made_as_it_is_read_is_read_once_and_in_pieces():
    """The report's jobs: each made when the encoder reaches it, the text let go in pieces as it goes."""
    made: list[int] = []

    def job(n: int) -> dict[str, Any]:
        made.append(n)
        return {"job": f"{n:032x}", "series": [{"id": n, "time": None}], "summary": ["one.", "two."]}

    class OneAtATime(list):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return 1000

        def __iter__(self) -> Any:
            return map(job, range(1000))

    pieces = indented_pieces({"jobs": OneAtATime()}, 64)
    first = next(pieces)
    assert 0 < len(made) < 1000  # the first piece left before the last job was made
    text = first + "".join(pieces)
    assert made == list(range(1000))
    assert text == json.dumps({"jobs": [job(n) for n in range(1000)]}, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("unsafe", ["\x7f", "\x85", "\u061c", "\u200b", "\u2028", "\u202e", "\u2066", "\ufeff"])
def test_a_character_a_terminal_or_editor_acts_on_is_escaped_in_ascii_text_too(unsafe):
    """The escape pass lets a piece through untouched when it is ASCII: DEL is ASCII, and must still be escaped
    (review14a: the DEL test dropped, no test failed)."""
    from flinkdoctor.views.contract import _escaped

    assert _escaped(f"plain {unsafe} text") == f"plain \\u{ord(unsafe):04x} text"
    assert _escaped("plain text") == "plain text"
