"""Secrets masked before any text leaves flinkdoctor: every report view, and the events table it keeps.

Logs are read on machines with production credentials and reports get pasted into tickets. What is masked:
values of keys that Flink itself treats as sensitive (its GlobalConfiguration masks keys containing password,
secret, token, jaas.config, auth-params, basic-auth, http-headers, api/service/account keys; older Flink and
forks print the raw value in "Loading configuration property: key, value"), the password of a URL's user-info
(jdbc:postgresql://user:pw@host), Authorization headers (Bearer / Basic), AWS access key ids, and PEM private-key
blocks. The scan tasks mask the events table's text with the same `mask` before it is written (scanner.py), and
every view masks what it shows.
"""

from __future__ import annotations

import re

MASK = "******"

_WORDS = (
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "credential",
    "credentials",
    "jaas.config",
    "auth-params",
    "basic-auth",
    "http-headers",
    "access.key",
    "access-key",
    "access_key",
    "accesskey",
    "secret-key",
    "secret_key",
    "secretkey",
    "private-key",
    "private_key",
    "api-key",
    "api_key",
    "apikey",
    "service-key",
    "account.key",
    "encryption.key",
)
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
    # key = value, key: value, key="value" for sensitive keys (JAAS, JDBC properties, connector configs)
    (r"(\b" + _SENSITIVE_KEY + r"[\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&}\])\"']+)", r"\1" + MASK),
    # AWS access key ids anywhere
    (r"\b((?:AKIA|ASIA)[0-9A-Z]{16})\b", MASK),
)
# Every mask above needs one of these in its match, in any case (a sensitive key word only when a key of it is
# followed by = or :): text without any is left as it is. The scan tasks flag the events that hold one, with RE2
# over whole Arrow arrays, and run `mask` only on those.
_KEY_WORDS = (*_WORDS, "privatekey")
TRIGGER_RE2 = (
    "(?i)(?:"
    + "|".join(re.escape(w) for w in ("private key-----", "configuration property: ", "authorization", "bearer", "://"))
    + "|akia|asia|(?:"
    + "|".join(re.escape(w) for w in _KEY_WORDS)
    + r""")[a-z0-9_.-]{0,64}["']?[\s\x0B]*[=:])"""
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


def mask(text: str | None) -> str | None:
    """`text` with every secret value replaced by ******."""
    if not text:
        return text
    lower = text.lower()
    for pattern, replacement, gate in _COMPILED:
        if any(word in lower for word in gate):
            text = pattern.sub(replacement, text)
    return text
