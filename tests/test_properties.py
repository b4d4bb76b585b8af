"""Property-based tests (hypothesis) of the pieces that read hostile text: layout detection, YARN splitting, secret
masking and terminal inertness. No Spark here: these run in milliseconds per example."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import DATA
from flinkdoctor.safety.inert import inert, is_inert
from flinkdoctor.safety.masking import mask
from flinkdoctor.sources import yarn
from flinkdoctor.sources.layouts import detect_layout, load_layouts

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LAYOUT_IDS = {layout.id for layout in load_layouts()}
REAL_LINES = {  # real first lines of each layout, from the seeds and the lab
    "flink-log4j2": (DATA / "seeds" / "000" / "jobmanager.log"),
    "seed-custom-log4j1": (DATA / "seeds" / "003" / "jobmanager.log"),
    "syslog": (DATA / "seeds" / "003" / "messages"),
}


@FAST
@given(st.lists(st.text(max_size=200), max_size=50))
def test_layout_detection_never_fails_and_names_a_known_layout(lines):
    assert detect_layout(lines) in LAYOUT_IDS | {"plain"}


@FAST
@given(st.data())
def test_a_layout_wins_over_noise_it_outnumbers(data):
    layout = data.draw(st.sampled_from(sorted(REAL_LINES)))
    real = [line for line in REAL_LINES[layout].read_text(errors="replace").splitlines() if line.strip()]
    headers = [line for line in real if re.match(r"^(\d{4}-|\[[A-Z]|[A-Z][a-z]{2} )", line)]
    chosen = data.draw(st.lists(st.sampled_from(headers), min_size=5, max_size=20))
    noise = data.draw(st.lists(st.text(alphabet=string.ascii_letters + " \t.:", max_size=80), max_size=len(chosen) - 1))
    mixed = data.draw(st.permutations(chosen + noise))
    assert detect_layout(list(mixed)) == detect_layout(chosen)


def _aggregated(parts: list[tuple[str, str, bytes]], hadoop3: bool) -> bytes:
    out = b""
    for n, (container, logtype, content) in enumerate(parts):
        name = f"container_1550743644028_2661_03_{n + 1:06d}"
        if hadoop3:
            out += (
                f"Container: {name} on host-{container}_45454\nLogAggregationType: AGGREGATED\n"
                f"{'=' * 68}\nLogType:{logtype}\nLogLastModifiedTime:Tue Apr 23 17:40:00 +0800 2019\n"
                f"LogLength:{len(content)}\nLogContents:\n"
            ).encode()
            out += content + f"\nEnd of LogType:{logtype}\n{'*' * 88}\n\n".encode()
        else:
            out += (
                (
                    f"Container: {name} on host-{container}_45454\n{'=' * 68}\nLogType:{logtype}\n"
                    f"Log Upload Time:Tue Apr 23 17:40:00 +0800 2019\nLogLength:{len(content)}\n"
                    f"Log Contents:\n"
                ).encode()
                + content
                + b"\n"
            )
    return out


PART = st.tuples(
    st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8),
    st.sampled_from(["jobmanager.log", "taskmanager.log", "taskmanager.out", "gc.log"]),
    st.binary(max_size=2000),
)


@FAST
@given(st.lists(PART, min_size=1, max_size=6), st.booleans())
def test_yarn_split_gives_back_every_part_and_counts_every_line(tmp_path_factory, parts, hadoop3):
    folder = tmp_path_factory.mktemp("yarn")
    data = _aggregated(parts, hadoop3)
    path = folder / "application.log"
    path.write_bytes(data)
    written: list[tuple[yarn.YarnPart, Path]] = []

    def destination(part):
        target = folder / f"part-{len(written)}"
        written.append((part, target))
        return target

    framing = yarn.split(path, destination)
    assert [target.read_bytes() for _, target in written] == [content for _, _, content in parts]
    assert [part.log_type for part, _ in written] == [logtype for _, logtype, _ in parts]
    lines_in_parts = sum(target.read_bytes().count(b"\n") for _, target in written)
    assert framing + lines_in_parts == data.count(b"\n")
    all_lines = data.split(b"\n")
    for (part, _), (_, _, content) in zip(written, parts, strict=True):  # each part starts right after its framing
        if content:
            first = content.split(b"\n")[0]
            assert all_lines[part.start_line] == first


SECRET = st.text(alphabet=string.ascii_letters + string.digits + "!#%^*-_+=/", min_size=6, max_size=40).filter(
    lambda s: not s.startswith(("-", "*"))
)
KEY = st.sampled_from(
    [
        "password",
        "s3.secret-key",
        "ssl.truststore.password",
        "sasl.jaas.config",
        "api-key",
        "fs.azure.account.key.acct.blob.core.windows.net",
        "AWS_SECRET_ACCESS_KEY",
        "accessToken",
        "security.kerberos.token",
        "basic-auth",
        "client.secret",
    ]
)
FORMAT = st.sampled_from(
    ["{k}={v}", "{k}: {v}", '{k}="{v}"', '"{k}": "{v}"', "{k} = '{v}'", "Loading configuration property: {k}, {v}"]
)


@FAST
@given(KEY, SECRET, FORMAT, st.text(alphabet=string.ascii_letters + " .:[]-", max_size=60))
def test_a_sensitive_value_never_survives_masking(key, secret, layout, prefix):
    assume(secret not in prefix + key + layout)
    line = prefix + " " + layout.format(k=key, v=secret)
    assert secret not in mask(line)
    assert _triggered(line)  # the Spark tasks send it to the masks


def _triggered(text: str) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.safety.masking import TRIGGER_RE2

    return pc.match_substring_regex(pa.array([text]), TRIGGER_RE2)[0].as_py()


@FAST
@given(
    st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=12),
    SECRET.filter(lambda s: "/" not in s),  # a raw '/' ends a URL's authority: RFC 3986 percent-encodes it
    st.sampled_from(["jdbc:postgresql", "https", "mongodb", "redis", "s3a"]),
)
def test_url_user_info_password_is_masked(user, secret, scheme):
    assume(secret not in f"{scheme}://{user}:@db.internal:5432/x")
    line = f"connecting to {scheme}://{user}:{secret}@db.internal:5432/x"
    masked = mask(line)
    assert secret not in masked and f"{user}:" in masked
    assert _triggered(line)


@FAST
@given(st.text(max_size=300))
def test_masking_is_idempotent_and_never_fails(text):
    once = mask(text)
    assert mask(once) == once
    assert once == text or _triggered(text)  # text without a trigger word is left alone: the tasks skip it


@FAST
@given(
    st.lists(
        st.one_of(
            st.text(max_size=40),
            KEY,
            SECRET,
            st.sampled_from(["=", ": ", "://", "@", " ", "Bearer ", "Authorization: ", "AKIA", "-----BEGIN RSA "]),
            st.sampled_from(["PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "configuration property: "]),
        ),
        max_size=12,
    ).map("".join)
)
def test_the_masks_words_skip_only_text_a_mask_could_not_change(text):
    """mask() runs each pattern only where one of its words is: the same as running every pattern."""
    from flinkdoctor.safety.masking import MASKS

    every = text
    for pattern, replacement in MASKS:
        every = re.sub(pattern, replacement, every)
    assert mask(text) == every


@FAST
@given(st.text(max_size=300))
def test_inert_text_holds_nothing_a_terminal_acts_on(text):
    shown = inert(text)
    assert is_inert(shown) and "\n" not in shown
    assert inert(shown) == shown  # already inert text is left alone


def test_masking_stays_linear_on_a_long_hostile_line():
    """The scan tasks run these patterns over kept events; one quadratic pattern stalled a 1 MiB line for minutes."""
    import time

    for line in ("y" * (1 << 20), "x://" * (1 << 18), "aB" * (1 << 19), "a:" * (1 << 19)):
        started = time.perf_counter()
        mask(line)
        assert time.perf_counter() - started < 3, line[:10]


# the URL mask's user and password, drawn from what its classes stop at (`:` in the user, blanks, quotes, `/`, `@`)
# and from what they take (multi-byte characters, `%`), at lengths about its bound of 256
URL_PART = st.text(alphabet="ab%:/@ \r\n\x0b\x85\u2028\u00a0\"'\u00e9\U0001f600", max_size=258)
URL_TAKES = re.compile("[^/\\s:@\"']*")  # what the mask's user part takes (its password part takes `:` too)


@FAST
@given(
    st.sampled_from(["jdbc:postgresql", "https", "s3a"]),
    URL_PART,
    URL_PART.filter(len),
    st.text(max_size=20),
    st.text(max_size=20),
)
def test_a_url_the_masks_change_is_triggered(scheme, user, password, before, after):
    """The trigger's URL part (`://`, then up to an `@` with a `:` between) holds wherever the URL mask changes a
    URL's user info; a user info within the mask's classes and bound is masked (so the first assertion is reached)."""
    text = f"{before} {scheme}://{user}:{password}@{after}"
    masked = mask(text)
    assert masked == text or _triggered(text)
    if URL_TAKES.fullmatch(user + password.replace(":", "")) and len(user) <= 256 and len(password) <= 256:
        assert masked != text


@pytest.mark.parametrize("size", [1, 255, 256])
@pytest.mark.parametrize("char", ["a", "\u00e9", "\U0001f600"])  # 1, 2 and 4 bytes of UTF-8: RE2 counts characters
def test_a_url_at_the_masks_bound_is_triggered(size, char):
    line = f"jdbc:mysql://{char * size}:{char * size}@db/x"
    assert mask(line) != line and _triggered(line)


def test_every_notion_of_a_blank_is_pythons_on_every_character():
    """One blank everywhere: Python's `\\s` (the masks, the rules' regexes) is the trigger's class (RE2, in the
    scan tasks: masking._SPACE), `\\s` as the rules' regexes become RE2 (re2.unicode_classes), the Hyperscan
    patterns' class on ASCII (patterns.SPACE: their text outside ASCII is left to Python) and what a line's end is
    trimmed of (measure.SPACES, str.rstrip), on every character: a blank one of them missed would let a key, a
    no-break space and `=` pass the trigger unmasked, or a rule's match differ between the engines."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.safety.masking import _SPACE
    from flinkdoctor.scan import measure, patterns
    from flinkdoctor.scan.re2 import re2_regex

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    python = [c for c in chars if re.fullmatch(r"\s", c)]
    strings = pa.array(chars)
    for name, re2 in (("the trigger's", _SPACE), ("the rules'", re2_regex(r"\s"))):
        assert re2 is not None
        hits = pc.match_substring_regex(strings, f"^(?:{re2})$").to_pylist()
        assert [c for c, hit in zip(chars, hits, strict=True) if hit] == python, name
    assert sorted(patterns.SPACE) == [ord(c) for c in python if c.isascii()]
    assert sorted(measure.SPACES) == python and all(c.isspace() for c in python)


@FAST
@given(
    KEY,
    SECRET,
    st.sampled_from(
        [
            '{{\\"{key}\\":\\"{secret}\\"}}',
            '\\"{key}\\": \\"{secret}\\"',
            '{key}="{secret}',
            "{key}: '{secret}",
            "{{\\'{key}\\': \\'{secret}\\'}}",  # single quotes escaped
            '{{\\\\\\"{key}\\\\\\":\\\\\\"{secret}\\\\\\"}}',  # JSON in a string in a string
        ]
    ),
)
def test_a_secret_in_json_inside_a_string_or_behind_an_unclosed_quote_is_masked(key, secret, shape):
    """A JSON document logged inside a string ({\\"password\\":\\"x\\"}: a JSON log line's message, a config
    printed escaped; escaped again, or with single quotes) and a value whose quote a cut line never closes
    (password="x) were left as they were: the key's quote was read only unescaped, the value only quoted whole or
    unquoted. Masked now, and triggered."""
    assume(secret not in "config " + key + shape + " end")
    line = "config " + shape.format(key=key, secret=secret) + " end"
    assert secret not in mask(line) and _triggered(line)


@FAST
@given(KEY, st.text(alphabet=" \t\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2007\u2028\u2029\u202f\u3000", max_size=3), SECRET)
def test_a_key_a_python_blank_and_a_value_are_triggered(key, blank, secret):
    assume(secret not in key)  # (a secret the key holds stays in the key)
    line = f"{key}{blank}= {secret}"
    assert secret not in mask(line) and _triggered(line)


def test_the_trigger_holds_on_every_real_and_hostile_text_masking_changes(tmp_path):
    """Every file of tests/data and of the hostile bundle, whole and line by line: masked unchanged unless the
    trigger holds (the scan tasks mask only the events it flags)."""
    from conftest import DATA
    from hostile_input import SECRET_VALUES, hostile_bundle

    texts = [data.decode("utf-8", "replace") for data in hostile_bundle(tmp_path / "hostile").values()]
    texts += [path.read_bytes().decode("utf-8", "replace") for path in sorted(DATA.rglob("*")) if path.is_file()]
    changed = 0
    for text in texts:
        for piece in [text, *text.split("\n")]:
            if mask(piece) != piece:
                changed += 1
                assert _triggered(piece), piece[:200]
    assert changed >= len(SECRET_VALUES)  # the hostile bundle's planted secrets at least
