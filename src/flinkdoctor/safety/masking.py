"""The one masker: secrets masked before any text leaves flinkdoctor (safety/outbound.py is where it leaves).

Logs are read on machines with production credentials and reports get pasted into tickets. What is masked:
values of keys that Flink itself treats as sensitive (FLINK_SENSITIVE, read from Flink's own code; older Flink
and forks print the raw value in "Loading configuration property: key, value") and of keys that commonly hold
credentials elsewhere (connector, JDBC, cloud and JVM properties), the password of a URL's user-info
(jdbc:postgresql://user:pw@host), Authorization headers (Bearer / Basic), AWS access key ids, and PEM private-key
blocks. Three forms, one set of patterns: `mask` for a text, `mask_log` for a whole log's bytes, `scrub` for
structured data (a report model, a REST answer, a row), where a key and its value are apart and the key decides.
The scan tasks mask the events table's text with `mask` when they cut it from the file (scan/scanner.py).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import numbers
import re
import weakref
from collections import UserList, UserString, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

MASK = "******"
# Flink's GlobalConfiguration.isSensitive(key): key.toLowerCase() contains one of SENSITIVE_KEYS. Read with
# `javap -c -p org.apache.flink.configuration.GlobalConfiguration` from flink-dist-1.20.3.jar and
# flink-dist-2.1.1.jar (2.1.1 adds "api-key"); Flink applies it to the flattened key of flat (1.x flink-conf.yaml)
# and nested (2.x config.yaml) configurations alike.
FLINK_SENSITIVE = (
    "password",
    "secret",
    "fs.azure.account.key",
    "apikey",
    "api-key",
    "auth-params",
    "service-key",
    "token",
    "basic-auth",
    "jaas.config",
    "http-headers",
)

# Keys outside Flink's own configuration that hold credentials (connector and JDBC properties, cloud SDKs,
# environment variables), matched the same way
OTHER_SENSITIVE = (
    "passwd",
    "pwd",
    "credential",
    "access.key",
    "access-key",
    "access_key",
    "accesskey",
    "secret-key",
    "secret_key",
    "secretkey",
    "private-key",
    "private_key",
    "privatekey",
    "api_key",
    "account.key",
    "encryption.key",
)
_WORDS = FLINK_SENSITIVE + OTHER_SENSITIVE
_ALT = "|".join(re.escape(w) for w in _WORDS)
# a sensitive key as configs, properties and environments spell it: lower.dotted, UPPER_SNAKE or lowerCamel; a Java
# class name such as TokenCache or InvalidTokenException (capitalised) is not a key
_SENSITIVE_KEY = (
    rf"(?:[a-z0-9_.-]{{0,64}}(?:{_ALT})[a-z0-9_.-]{{0,64}}|[A-Z0-9_.-]{{0,64}}(?:{_ALT.upper()})[A-Z0-9_.-]{{0,64}}"
    r"|(?=[a-z])[a-zA-Z0-9]{0,64}(?i:password|passwd|secret|token|credentials?|apikey|accesskey|secretkey"
    r"|privatekey)[a-zA-Z0-9]{0,64})"
)
_CONFIG_KEY = rf"[\w.-]{{0,128}}(?i:{_ALT})[\w.-]{{0,128}}"

# Every repetition that can run over long input is bounded: the JVM's and Python's regex engines backtrack, and a
# 1 MiB line must cost linear time (tests/test_properties.py measures it).
# (pattern, replacement with \1-style groups); order matters: whole-line forms before key=value pairs
MASKS: tuple[tuple[str, str], ...] = (
    # PEM private key blocks (multi-line event text), and a BEGIN line whose END is not in the text
    (
        r"(-----BEGIN [A-Z ]{0,32}PRIVATE KEY-----)[\s\S]{0,16384}?(-----END [A-Z ]{0,32}PRIVATE KEY-----)",
        r"\1" + MASK + r"\2",
    ),
    (r"(-----BEGIN [A-Z ]{0,32}PRIVATE KEY-----)(?!\*{6}-----END).*", r"\1" + MASK),
    # Flink's config dump: "Loading configuration property: s3.secret-key, AKIA..." (the value runs to the end)
    (r"(configuration property: " + _CONFIG_KEY + r", ).*", r"\1" + MASK),
    # Authorization headers and bare bearer tokens
    (
        r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|negotiate|digest)?\s*)[^\s\"',;]+",
        r"\1" + MASK,
    ),
    (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1" + MASK),
    # user:password@ in any URL (jdbc:postgresql://admin:S3cret@db/x, https://user:token@host)
    (r"\b([A-Za-z][A-Za-z0-9+.-]{0,30}://[^/\s:@\"']{0,256}:)[^/\s@\"']{1,256}(@)", r"\1" + MASK + r"\2"),
    # key = value, key: value, key="value" for sensitive keys (JAAS, JDBC properties, connector configs); JSON
    # inside a string, escaped up to three times (\"password\":\"x\", \'password\': \'x\'), and a quote that
    # a cut line never closes (password="x)
    (
        r"(\b" + _SENSITIVE_KEY + r"\\{0,3}[\"']?\s*[=:]\s*)"
        r"(\\{0,3}\"[^\"]*\"|\\{0,3}'[^']*'|\\{0,3}[\"']?[^\s,;&}\])\"']+)",
        r"\1" + MASK,
    ),
    # AWS access key ids anywhere
    (r"\b((?:AKIA|ASIA)[0-9A-Z]{16})\b", MASK),
)
# Every mask above needs one of these in its match, in any case (a sensitive key word only when a key of it is
# followed by = or :): text without any is left as it is. The scan tasks flag the events that hold one, with RE2
# over whole Arrow arrays, and run `mask` only on those.
# A URL only with a user-info password: `://`, then what the URL mask's match holds up to its `@` (its classes
# widened to any blank but a newline, so the trigger holds wherever the mask matches and stays within a line).
# "://" alone sent every event that prints a URL (a checkpoint's hdfs:// path) to the masks: 619 events of a lab
# part, none of them changed.
_KEY_WORDS = _WORDS
# Python's `\s` (str.isspace: the masks run in Python's re), which RE2's `\s` ([\t\n\f\r ]) is not: a key, a
# no-break space, then `=` is masked, so the trigger must hold on it too. Escapes both engines read, and the
# characters themselves above U+00FF (RE2 has no \u, Python's re no \x{...}).
_SPACE = r"[\t-\r\x1c- \x85\xa0" + "\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000" + "]"
_URL_USER_INFO = r"""://[^/:@"'\n]{0,256}:[^/@"'\n]{1,256}@"""
TRIGGER_RE2 = (
    "(?i)(?:"
    + "|".join(re.escape(w) for w in ("private key-----", "configuration property: ", "authorization", "bearer"))
    + "|"
    + _URL_USER_INFO
    + "|akia|asia|(?:"
    + "|".join(re.escape(w) for w in _KEY_WORDS)
    + r""")[a-z0-9_.-]{0,64}\\{0,3}["']?"""
    + _SPACE
    + "*[=:])"
)
# Per mask, words one of which its every match holds (lower case: looked up in the lower-cased text), so a mask
# runs only on text that could need it: the key=value mask reads 3 MB/s, and "://" alone (a stack trace's URL)
# must not make every trace pay for it. In MASKS order.
_GATES: tuple[tuple[str, ...], ...] = (
    ("private key-----",),
    ("private key-----",),
    ("configuration property: ",),
    ("authorization",),
    ("bearer",),
    ("://",),
    tuple(w.replace("-", "") for w in _KEY_WORDS) + _KEY_WORDS,  # lowerCamel spellings have no separator
    ("akia", "asia"),
)
_COMPILED = tuple(
    (re.compile(pattern), replacement, gate) for (pattern, replacement), gate in zip(MASKS, _GATES, strict=True)
)


# any gate's word, and any sensitive word, in one search of the lower-cased text: a report of 100,000 jobs'
# checkpoints holds millions of strings, nearly none of which holds one (the same answer as a test per word)
_ANY_GATE = re.compile("|".join(re.escape(w) for w in sorted({w for gate in _GATES for w in gate}, key=len)[::-1]))
_ANY_WORD = re.compile("|".join(re.escape(w) for w in _WORDS))


@functools.lru_cache(maxsize=1 << 14)
def is_sensitive(key: str) -> bool:
    """True when Flink would mask the value of `key` (FLINK_SENSITIVE), or the key names another credential.
    Remembered: a model's records ask it of the same few field names millions of times."""
    return _ANY_WORD.search(key.lower()) is not None


def mask_value(key: str, value: str | None) -> str | None:
    """The value of configuration key `key` as it may be shown: all of it masked when the key is sensitive."""
    if value in (None, ""):
        return value
    return MASK if is_sensitive(key) else mask(value)


# the fields of a record (a mapping or a dataclass) that hold the value of its `key` field
VALUE_FIELDS = ("value", "default")
_Model = TypeVar("_Model")  # a dataclass instance (a report model)


def scrub(node: Any) -> Any:
    """`node` (a report model of dataclasses, a REST answer, a row: any tree of mappings, sequences, sets and
    dataclasses) with every secret masked: each string through `mask` (bytes through `mask_log`), and a value
    whole when its key is sensitive: a mapping's key, or the `key` field of a record beside its `value`
    ({"key": k, "value": v}, as REST /jobmanager/config and the configuration audit hold settings). The same type
    comes back (a read-only mapping as a dict), and the very object when nothing in it needed masking (a report
    of 100,000 jobs is not copied to change nothing). A model `masked_model` returned is given back at once: it
    is masked already."""
    if _is_masked(node):
        return node
    return _scrub(node)


def masked_model(node: _Model) -> _Model:
    """A model built to be shown (build_report's report), masked, and remembered as masked: the way out
    (outbound.py) then shows it without a second pass over it. Only that very object is remembered, and only
    here: a copy with a field changed (`dataclasses.replace`) is scrubbed whole again, unless made by
    `masked_replace`; the model must not be changed in place afterwards (none is: the views read it)."""
    done: _Model = _scrub(node)
    _remember(done)
    return done


def masked_replace(node: _Model, **changes: Any) -> _Model:
    """`dataclasses.replace(node, **changes)` with the new values scrubbed; remembered as masked when `node` was
    (a report given its run's timings and work dir after it was built)."""
    new: _Model = dataclasses.replace(node, **dict(_scrub_items(changes.items())))  # type: ignore[type-var]
    if _is_masked(node):
        _remember(new)
    return new


# id -> weak reference of each model scrub returned (a weak reference: the entry goes with the model)
_MASKED: dict[int, weakref.ref[Any]] = {}


def _is_masked(node: Any) -> bool:
    ref = _MASKED.get(id(node))
    return ref is not None and ref() is node


def _remember(node: Any) -> None:
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return
    with contextlib.suppress(TypeError):  # a slotted record has no weak reference: not remembered, scrubbed again
        _MASKED[id(node)] = weakref.ref(node, _forget(id(node)))


def _forget(key: int) -> Callable[[weakref.ref[Any]], None]:
    """The callback that drops a model's entry when the model goes (its id may then be another object's)."""

    def forget(_: weakref.ref[Any]) -> None:
        _MASKED.pop(key, None)

    return forget


_ATOMS = frozenset({int, float, bool, type(None)})


def _scrub(node: Any) -> Any:
    kind = type(node)
    if kind is str:
        return mask(node)
    if kind in _ATOMS:
        return node
    names = _RECORD_FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(node) or isinstance(node, type):
            return _scrub_other(node)
        names = _RECORD_FIELDS[kind] = _record_fields(node)
    fields, plain, later = names
    if plain and not later:  # no name decides about a value: each masked as itself (a report's 100,000 jobs)
        changed = {}
        for name in fields:
            value = getattr(node, name)
            done = _scrub(value)
            if done is not value:
                changed[name] = done
        return dataclasses.replace(node, **changed) if changed else node
    pairs = _set_fields(node, fields + later)
    return _rebuilt(node, fields, [(name, _scrub(value)) for name, value in pairs] if plain else _scrub_items(pairs))


def _scrub_other(node: Any) -> Any:
    """Anything but a record or one of _ATOMS' exact types."""
    if isinstance(node, str):
        return mask(node)
    if isinstance(node, UserString):
        return _user_string(node, mask(node.data))
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return _scrub_named_tuple(node)
    if isinstance(node, _COLLECTIONS):
        return _scrub_collection(node)
    if isinstance(node, (dict, Mapping)):  # (dict first: a dict without the ABC's slower test)
        return _scrub_mapping(node)
    if isinstance(node, (bytes, bytearray)):
        masked = mask_log(bytes(node))
        return node if masked == node else type(node)(masked)
    return node


# a dataclass -> its init fields (what replace can set), whether it is plain (no field's name is sensitive and none
# is `key`, a setting's record, so that no name decides about a value) and its other fields (init=False: set after)
_RECORD_FIELDS: dict[type, tuple[tuple[str, ...], bool, tuple[str, ...]]] = {}


def _record_fields(node: Any) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    every = dataclasses.fields(node)
    names = tuple(f.name for f in every if f.init)
    later = tuple(f.name for f in every if not f.init)
    return names, not any(name == "key" or is_sensitive(name) for name in names + later), later


_UNSET = object()


def _set_fields(node: Any, names: tuple[str, ...]) -> list[tuple[str, Any]]:
    """The record's fields that have a value (an init=False field without a default may have none yet)."""
    pairs = [(name, getattr(node, name, _UNSET)) for name in names]
    return [(name, value) for name, value in pairs if value is not _UNSET]


def _rebuilt(node: Any, fields: tuple[str, ...], pairs: list[tuple[str, Any]]) -> Any:
    """The record with its masked field values: init fields through `replace` (its checks and __post_init__ run
    as for any record), the others (init=False) set on the new record after, as __init__ never takes them (a
    frozen one too). `replace` makes those anew (their default, or what __post_init__ makes of the masked
    values): each is set again to its own value masked, so that none is lost."""
    changed = {name: value for name, value in pairs if value is not getattr(node, name)}
    if not changed:
        return node
    init = set(fields)
    if init.isdisjoint(changed):
        new, later = copy.copy(node), list(changed.items())
    else:
        new = dataclasses.replace(node, **{name: value for name, value in changed.items() if name in init})
        later = [(name, value) for name, value in pairs if name not in init]
    for name, value in later:
        object.__setattr__(new, name, value)
    return new


def _scrub_named_tuple(node: Any) -> Any:
    """A named tuple masked as a record: its field names decide about its values as a mapping's keys do."""
    values = [value for _, value in _scrub_items(zip(node._fields, node, strict=True))]
    return node if all(a is b for a, b in zip(values, node, strict=True)) else type(node)(*values)


_COLLECTIONS = (list, tuple, set, frozenset, deque, UserList)


def _scrub_mapping(node: Mapping[Any, Any], items: list[tuple[Any, Any]] | None = None) -> Any:
    """A mapping masked (`items`, its items masked, when the caller made them): a dict of its own type (a
    defaultdict keeps its default, a Counter its counts), any other mapping (a read-only one, a ChainMap, a
    UserDict) as a dict of its items; the very mapping when nothing in it needed masking."""
    items = _scrub_items(node.items()) if items is None else items
    if all(k is a and v is b for (k, v), (a, b) in zip(items, node.items(), strict=True)):
        return node
    if type(node) is dict or not isinstance(node, dict):
        return dict(items)
    new = copy.copy(node)
    new.clear()
    for key, value in items:  # one by one: a Counter's update would count the pairs, dict.update skips an
        new[key] = value  # OrderedDict's own order
    return new


def _scrub_collection(node: Any, each: Callable[[Any], Any] | None = None) -> Any:
    """A list, tuple, set, deque or UserList masked (each item by `each`, `_scrub` by default), of its own type;
    the very one when nothing in it needed masking. Each is masked by what it holds, never passed by its type (a
    set of names). Outside a sensitive key a named tuple is `_scrub_named_tuple`'s: its field names decide."""
    done = [(each or _scrub)(item) for item in node]
    if all(a is b for a, b in zip(done, node, strict=True)):
        return node
    if isinstance(node, deque):
        return type(node)(done, node.maxlen)
    if isinstance(node, UserList):  # (a subclass's own __init__ may take other arguments)
        user = copy.copy(node)
        user.data = done
        return user
    return type(node)(*done) if hasattr(node, "_fields") else type(node)(done)


def _user_string(node: UserString, masked: str | None) -> UserString:
    """A UserString holding `masked`: the very one when nothing changed, else a copy (a subclass's own fields
    kept: its __init__ may take other arguments)."""
    if masked == node.data:
        return node
    user = copy.copy(node)
    user.data = masked or ""
    return user


def _scrub_items(pairs: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    items = list(pairs)
    record_key = next((str(v) for k, v in items if k == "key" and isinstance(v, (str, UserString))), None)
    secret_record = record_key is not None and is_sensitive(record_key)
    out = []
    for key, value in items:
        if (secret_record and key in VALUE_FIELDS) or (isinstance(key, (str, UserString)) and is_sensitive(str(key))):
            out.append((_scrub(key), _hidden(value)))
        else:
            out.append((_scrub(key), _scrub(value)))
    return out


def _hidden(value: Any) -> Any:
    """A sensitive key's value, all of it: each string, number and bytes in it masked whole, its shape kept (a
    list of tokens, a mapping of credentials, a record, as a REST answer or a configuration may hold them; a
    mapping's keys are masked as text, not whole). Nothing, a flag and an empty text are shown as they are: they
    tell that the setting is unset or off."""
    if isinstance(value, bool) or value is None or (isinstance(value, (str, bytes, bytearray)) and not value):
        return value
    if isinstance(value, (str, numbers.Number)):  # (a Decimal of a SQL row too)
        return MASK
    if isinstance(value, UserString):
        return _user_string(value, MASK if value.data else value.data)
    if isinstance(value, (bytes, bytearray)):
        return type(value)(MASK.encode())
    if isinstance(value, _COLLECTIONS):
        return _scrub_collection(value, _hidden)
    if isinstance(value, (dict, Mapping)):
        return _scrub_mapping(value, [(_scrub(k), _hidden(v)) for k, v in value.items()])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields, _, later = _RECORD_FIELDS.get(type(value)) or _record_fields(value)
        return _rebuilt(value, fields, [(name, _hidden(each)) for name, each in _set_fields(value, fields + later)])
    return _scrub(value)


def mask(text: str | None) -> str | None:
    """`text` with every secret value replaced by ******."""
    if not text:
        return text
    if len(text) <= _SHORT:
        masked = _masked_short(text)
        return text if masked is None else masked
    return _masked(text)


_SHORT = 256  # a report's many short values (statuses, file names, ids) recur: their answers are remembered


@functools.lru_cache(maxsize=1 << 12)
def _masked_short(text: str) -> str | None:
    """A short text's masked form, or None when it holds nothing to mask (the text itself is then the answer:
    a model's unchanged values stay the very objects they were)."""
    masked = _masked(text)
    return None if masked == text else masked


def _masked(text: str) -> str:
    lower = text.lower()
    if _ANY_GATE.search(lower) is None:
        return text
    for pattern, replacement, gate in _COMPILED:
        if any(word in lower for word in gate):
            text = pattern.sub(replacement, text)
    return text


_LINE_TRIGGER = re.compile(TRIGGER_RE2)
_PEM_END = re.compile(r"-----END [A-Z ]{0,32}PRIVATE KEY-----")


def mask_lines(text: str) -> str:
    """A whole log's text masked line by line, as the scan masks an event: only the lines that hold a word some
    mask needs are masked (a log of 100 MB has few), and a PEM block from its BEGIN line to its END line."""
    pieces, done = [], 0
    for hit in _LINE_TRIGGER.finditer(text):
        if hit.start() < done:
            continue
        begin = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        end = len(text) if end < 0 else end
        close = (
            _PEM_END.search(text, hit.end(), hit.end() + 16384) if "private key-----" in hit.group().lower() else None
        )
        if close and close.end() > end:  # a key block: its lines kept as lines (a log's line numbers stay), masked
            first, *body, last = text[begin : close.end()].split("\n")
            pieces += [text[done:begin], "\n".join([mask(first) or "", *[MASK] * len(body), last])]
            done = close.end()
            continue
        pieces += [text[done:begin], mask(text[begin:end]) or ""]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def mask_log(data: bytes) -> bytes:
    """A log's bytes masked (`mask_lines`); bytes that are not UTF-8 are kept as they are."""
    return mask_lines(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
