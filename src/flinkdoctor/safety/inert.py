"""Input text made inert for a terminal: logs come from systems we do not control.

An escape sequence in a log line (ESC[2J clears the screen, OSC 8 makes a hyperlink, a title-setting sequence
can even be echoed back as input by some terminals) must be shown, not executed; so must bidi overrides, which
reorder what the reader sees. Every control and format character becomes a visible `\\xNN` / `\\u{NNNN}` escape.
Rich markup is a separate concern: views pass input text as `rich.text.Text`, never as a markup string.
"""

from __future__ import annotations

import unicodedata


def _unsafe(ch: str, keep_newlines: bool) -> bool:
    """Controls (C0, DEL, C1), format characters (bidi overrides, zero-width, tags) and line separators."""
    if ch == "\n":
        return not keep_newlines
    if ch < " " or "\x7f" <= ch <= "\x9f":
        return ch != "\t"
    return ch > "\x9f" and unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Co", "Cn")


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{{{code:04x}}}"


def inert(text: str | None, keep_newlines: bool = False) -> str:
    """`text` with every control or layout-changing character shown as an escape (newlines too, unless kept);
    a tab becomes a space in one-line text."""
    if not text:
        return ""
    if text.isascii() and text.isprintable():
        return text
    if not keep_newlines:
        text = text.replace("\t", " ")
    return "".join(_visible(ch) if _unsafe(ch, keep_newlines) else ch for ch in text)


def is_inert(text: str) -> bool:
    """True when `text` holds nothing a terminal would act on (for tests and assertions)."""
    return not any(_unsafe(ch, keep_newlines=True) for ch in text)
