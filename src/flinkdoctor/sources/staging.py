"""Staging: turn one input text file into the UTF-8 file Spark reads, losing nothing silently.

The engine reads `\\n`-separated UTF-8 lines. Input is not always that: a gzip stream cut short
(Spark's codec throws away the whole file), UTF-16/32 logs (every other byte NUL: no line parses), a file
without newlines (one row of gigabytes: the task dies). Staging copies such a file into the form Spark reads,
keeps everything before a cut, and says what it did (`Staged`). Plain UTF-8 text with no over-long line, the
usual case, is read where it is (`in_place`): finding that out reads a few bytes per MiB, not the file, and
nothing is written for it (a bundle of 100,000 rolled files is 100,000 links less to make and to remove). An
input read in place is never written, moved or removed: every copy goes to `dest`, in the work dir.

An over-long line is split into rows of at most MAX_LINE_BYTES. Every row after the first starts with PIECE
(a NUL byte), so the Spark stage knows it continues the line above: it counts no new line for it and keeps file
line numbers right. A copied line that itself starts with NUL gets ESCAPE in front, so it cannot pass for a
piece (such lines only occur in binary files, whose text is never shown).

Many small sources need no copy: the Spark stage reads them many to a task (events.plan).
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError
from .classify import HEAD_BYTES  # what classification reads of a staged file
from .shapes import LineMap, Plan, normalise

MAX_LINE_BYTES = 1024 * 1024  # longer lines are split into rows of this many bytes
CHUNK = 8 * 1024 * 1024
PIECE = b"\x00"  # first byte of every row that continues an over-long line
ESCAPE = b"\x01"  # put before a copied line that starts with PIECE

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)  # UTF-32 LE first: FF FE 00 00


@dataclass(frozen=True)
class Staged:
    path: Path  # the file Spark reads
    encoding: str  # of the input: 'utf-8' (read as is), 'utf-16-le', 'utf-32', ...
    head: bytes  # the staged file's first HEAD_BYTES (UTF-8): what classification reads
    truncated: str | None = None  # why the input ends early (a cut or corrupt gzip stream), if it does
    split_lines: int = 0  # over-long lines split into pieces
    size: int = 0  # bytes of the staged file
    copied: bool = False  # written by staging (counts against the unpack budget)
    in_place: bool = False  # `path` is the file given, read where it is: staging never writes or removes it


class TooLarge(InputError):
    """A compressed or transcoded input that would stage to more than the caller's byte budget."""


def detect_encoding(head: bytes) -> str | None:
    """The codec of a text head that is not plain UTF-8: from its BOM, else from where its NUL bytes fall
    (mostly-ASCII UTF-16 has a NUL in every other byte, UTF-32 in three of four). None for UTF-8 (or binary)."""
    for bom, codec in BOMS:
        if head.startswith(bom):
            return codec
    sample = head[:4096]
    sample = sample[: len(sample) - len(sample) % 4]
    if len(sample) < 8 or b"\x00" not in sample:
        return None
    quarter = len(sample) // 4
    nul = [sample[i::4].count(0) / quarter for i in range(4)]
    candidates = []
    if min(nul[1:]) > 0.9 and nul[0] < 0.1:
        candidates.append("utf-32-le")
    if min(nul[:3]) > 0.9 and nul[3] < 0.1:
        candidates.append("utf-32-be")
    odd, even = (nul[1] + nul[3]) / 2, (nul[0] + nul[2]) / 2
    if odd > 0.8 and even < 0.1:
        candidates.append("utf-16-le")
    if even > 0.8 and odd < 0.1:
        candidates.append("utf-16-be")
    for codec in candidates:  # a binary file can have the pattern; text decodes cleanly
        try:
            codecs.getincrementaldecoder(codec)("strict").decode(sample, False)
        except UnicodeDecodeError:
            continue
        return codec
    return None


def find_long_line(path: Path, cap: int = MAX_LINE_BYTES, size: int | None = None) -> int | None:
    """Offset of the first line longer than `cap` bytes, or None. From each line start it looks back from
    `cap` bytes ahead for the last newline, so it touches a few bytes per `cap`, not the whole file. `size`: the
    file's, when the caller has it."""
    size = path.stat().st_size if size is None else size
    if size <= cap:
        return None
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        start = 0
        while size - start > cap:
            newline = data.rfind(b"\n", start, start + cap + 1)
            if newline < 0:
                return start
            start = newline + 1
    return None


def stage(
    path: Path,
    dest: Path,
    *,
    head: bytes,
    compressed: bool,
    max_bytes: int | None = None,
    own: bool = False,
    size: int | None = None,
) -> Staged:
    """The file Spark reads for `path`: `path` itself when it is plain UTF-8 with no over-long line (read in
    place: its absolute path), else `dest` (`<work>/sources/<id:05d>.log`), its UTF-8 form. `head`: the input's
    first bytes (decompressed for gzip). `own`: `path` is a file staging may consume (a YARN part): moved to
    `dest`. `size`: the input's, as ingest saw it. Raises TooLarge when the staged file would exceed `max_bytes`."""
    encoding = detect_encoding(head)
    if not compressed and encoding is None:
        size = path.stat().st_size if size is None else size
        if find_long_line(path, size=size) is None:
            if own:
                path.rename(dest)
                return Staged(dest, "utf-8", head, size=size)
            where = os.path.abspath(path)
            if _nameable(where):
                return Staged(Path(where), "utf-8", head, size=size, in_place=True)
            dest.symlink_to(path.resolve())  # a name the file systems cannot take: read through a link of ours
            return Staged(dest, "utf-8", head, size=size)
    reader = _Reader(path, compressed)
    chunks: Iterable[bytes] = reader.chunks()
    if encoding is not None:
        chunks = _decoded(chunks, encoding)
    writer = _Writer(dest, path, max_bytes)
    try:
        for chunk in chunks:
            writer.write(chunk)
    except TooLarge:
        writer.close()
        dest.unlink()
        raise
    writer.close()
    if own:
        path.unlink()
    return Staged(
        dest, encoding or "utf-8", writer.head, reader.truncated, writer.split_lines, writer.size, copied=True
    )


class _Reader:
    """The input's bytes in chunks, gunzipped when compressed; a cut or corrupt stream ends the chunks and
    leaves the reason in `truncated` (everything before the damage has been yielded)."""

    def __init__(self, path: Path, compressed: bool):
        self.path, self.compressed = path, compressed
        self.truncated: str | None = None

    def chunks(self) -> Iterator[bytes]:
        with open(self.path, "rb") as handle:
            if not self.compressed:
                while chunk := handle.read(CHUNK):
                    yield chunk
                return
            yield from self._gunzip(handle)

    def _gunzip(self, handle: BinaryIO) -> Iterator[bytes]:
        """Every gzip member in turn (concatenated .gz files are valid), in bounded pieces (no bomb in memory)."""
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        written, data = 0, b""
        while True:
            if not data and not (data := handle.read(CHUNK)):
                out = inflate.flush()
                written += len(out)
                yield out
                break
            try:
                out = inflate.decompress(data, CHUNK)
            except zlib.error as err:
                self.truncated = f"gzip data corrupt after {written:,} bytes of output ({err}): read up to there"
                return
            written += len(out)
            yield out
            data = inflate.unconsumed_tail
            if inflate.eof:
                data = inflate.unused_data
                if len(data) < 2:
                    data += handle.read(CHUNK)
                if data.startswith(b"\x1f\x8b"):  # the next member
                    inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    continue
                self._trailing(data, handle)
                return
        if not inflate.eof:
            self.truncated = f"gzip stream truncated after {written:,} bytes of output: read up to there"

    def _trailing(self, data: bytes, handle: BinaryIO) -> None:
        """Bytes after the last gzip member: zero padding (tape blocks) is fine, anything else is reported."""
        extra = 0
        while data:
            if data.strip(b"\x00"):
                extra += len(data)
            data = handle.read(CHUNK)
        if extra:
            self.truncated = f"{extra:,} bytes after the gzip stream are not gzip data: ignored"


def _decoded(chunks: Iterable[bytes], encoding: str) -> Iterator[bytes]:
    """UTF-8 of a UTF-16/32 stream; undecodable units become U+FFFD, as Spark does for bad UTF-8."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    first = True
    for chunk in chunks:
        text = decoder.decode(chunk, False)
        if first and text:
            text, first = text.removeprefix("\ufeff"), False
        yield text.encode("utf-8")
    yield decoder.decode(b"", True).encode("utf-8")


class _Writer:
    """Writes the staged file: splits lines longer than MAX_LINE_BYTES, escapes copied lines that start with
    PIECE, keeps the head, and stops at the byte budget."""

    def __init__(self, dest: Path, source: Path, max_bytes: int | None):
        self.out = open(dest, "wb")  # noqa: SIM115 (closed by close())
        self.source, self.max_bytes = source, max_bytes
        self.line = 0  # bytes of the current row so far
        self.at_start = True  # the next byte starts a line of the input
        self.in_split = False  # the current input line has been split already
        self.split_lines = self.size = 0
        self.head = b""

    def write(self, data: bytes) -> None:
        n, p = len(data), 0
        while p < n:
            room = MAX_LINE_BYTES - self.line
            newline = data.rfind(b"\n", p, min(n, p + room + 1))
            if newline >= 0:  # every line up to here fits
                self._emit(data[p : newline + 1], real=True)
                self.line, self.in_split, p = 0, False, newline + 1
            elif n - p <= room:  # no newline, but the rest fits on the current row
                self._emit(data[p:], real=True)
                self.line += n - p
                p = n
            else:  # over-long: end the row here (not inside a UTF-8 character), the rest continues as a piece
                cut = back = p + room
                while back > p and cut - back < 3 and data[back] & 0xC0 == 0x80:  # a UTF-8 continuation byte
                    back -= 1
                if back > p and data[back] & 0xC0 != 0x80:
                    cut = back
                self._emit(data[p:cut], real=True)
                self._emit(b"\n" + PIECE, real=False)
                self.split_lines += not self.in_split
                self.line, self.in_split, p = 0, True, cut

    def _emit(self, data: bytes, real: bool) -> None:
        if real and data:
            if PIECE in data:
                data = data.replace(b"\n" + PIECE, b"\n" + ESCAPE + PIECE)
                if self.at_start and data.startswith(PIECE):
                    data = ESCAPE + data
            self.at_start = data.endswith(b"\n")
        elif not real:
            self.at_start = False
        self.size += len(data)
        if self.max_bytes is not None and self.size > self.max_bytes:
            raise TooLarge(
                f"{self.source.name}: refusing input: it decompresses to more than {self.max_bytes:,} "
                "bytes (a decompression bomb? raise the limit with --max-unpacked)"
            )
        if len(self.head) < HEAD_BYTES:
            self.head += data[: HEAD_BYTES - len(self.head)]
        self.out.write(data)

    def close(self) -> None:
        self.out.close()


def shown_input(staged: str) -> str:
    """The input a staged path reads, as an error names it: the file a link points to (ours, or the user's own
    link read in place), as an absolute path; else the path itself; shown as every output shows a name."""
    return shown(os.path.realpath(staged) if os.path.islink(staged) else staged)


def shown(name: str) -> str:
    """A file's path as every output shows it, one name for one path: the bytes of a name that are not UTF-8 (a
    Latin-1 host's, read by Python as surrogates) written as \\xNN and any other lone surrogate as \\uNNNN, so
    that reports stay valid UTF-8 text and no raw byte reaches a terminal, and a backslash of the name itself as
    \\\\ (as `ls -b` and Python write them): a name that holds the text `\\xe9` is never shown as the one whose byte
    is 0xE9. A name with neither is shown as it is."""
    if not _ESCAPED.search(name):
        return name
    return _SURROGATE.sub(_escape, name.replace("\\", "\\\\"))


_ESCAPED = re.compile(r"[\\\ud800-\udfff]")  # what `shown` changes: a backslash or a surrogate
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"  # (surrogateescape's bytes)


def _nameable(path: str) -> bool:
    """Whether the scan can open `path` by name: a file name of bytes that are not UTF-8 (a surrogate in Python's
    str) is refused by pyarrow's file systems and by the JVM, so such an input is read through a link named by us."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def restage(staged: Staged, plan: Plan, dest: Path) -> tuple[Staged, LineMap]:
    """`dest` (the staged file's place in the work dir) made the copy of a staged file read in `plan`'s shape
    (shapes.py): the copy is what Spark reads, the map cites the original's lines. Over-long copied lines are
    split as in `stage`. An input read in place is only read; a copy of ours at `dest` is replaced."""
    tmp = dest.with_suffix(".shaped")
    writer = _Writer(tmp, staged.path, None)
    try:
        line_map = normalise(plan, staged.path, writer.write)
    finally:
        writer.close()
    os.replace(tmp, dest)
    restaged = Staged(
        dest,
        staged.encoding,
        writer.head,
        staged.truncated,
        writer.split_lines,
        writer.size,
        copied=True,
    )
    return restaged, line_map
