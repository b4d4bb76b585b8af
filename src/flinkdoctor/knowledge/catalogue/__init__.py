"""The failure catalogue: what Flink and the libraries it runs with can say on a failure path, from their code.

Each entry is a message format that the code throws, logs at WARN or above, or prints before it exits, or an
exception class it defines; with a regex that finds it in a log line, the literals a prefilter needs, the
category it points to and why, where it was read and in which versions. The data beside this file is generated
by tools/catalogue from the sources (docs/catalogue.md says how, and what it covers): edit the tool or its
mapping, never the JSON.

`load_catalogue()` reads every component file once per process and validates it against
schemas/catalogue.schema.json (categories from vocabulary.py) and checks each id: a broken file is a RuleError
naming the file and the entry. It runs on every diagnose, so it is built to be quick: the schema is compiled to
Python once (fastjsonschema); the checked entries are kept in the user's cache (userstate.py) as plain tuples
under a digest of the files' bytes, so an unchanged catalogue is read back without parsing or checking the JSON
again; entries are made without the frozen dataclass's per-field __init__.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TypeAlias

from ...errors import RuleError
from ...jsondata import JSON, JSONObject
from ...runtime.userstate import cached, store
from ..validation import schema
from ..vocabulary import CATEGORIES


@dataclass(frozen=True)
class Entry:
    id: str  # stable across re-runs: "<component>:<12 hex of sha1(kind + text)>"
    kind: str  # "message" (a format printed or thrown) | "exception" (an exception class)
    text: str  # the format string / class name exactly as in the code
    regex: str  # what matches it in a log line (Python re and Hyperscan compatible)
    literals: tuple[str, ...]  # constant substrings every match holds, the longest first
    cls: str | None  # the exception class the message is thrown with (None: logged, printed)
    level: str | None  # how it is printed: throw | error | warn | fatal | stderr | exit
    category: str  # one of vocabulary.CATEGORIES
    reason: str  # why that category: "class ...", "package ...", "wording ..."
    component: str  # flink, kafka-clients, zookeeper, ... (schemas/catalogue.schema.json)
    versions: str  # the versions it was read from
    where: str  # provenance: jar!class or repo@commit:path:line
    fix: str | None  # a hint the code implies
    keys: tuple[str, ...]  # configuration keys the message names


@dataclass(frozen=True)
class Catalogue:
    entries: tuple[Entry, ...]
    by_id: dict[str, Entry] = field(repr=False)
    by_class: dict[str, Entry] = field(repr=False)  # exception entries by class name


def catalogue_dir() -> Path:
    return Path(str(resources.files("flinkdoctor").joinpath("knowledge/catalogue")))


@lru_cache(maxsize=1)
def _validator() -> Callable[[JSON], JSON]:
    """The component-file schema with the category vocabulary filled in, compiled to Python once."""
    import fastjsonschema

    full = schema("catalogue")
    full["$defs"] = {**full["$defs"], "category": {"enum": list(CATEGORIES)}}
    return fastjsonschema.compile(full)


def _check(path: Path, data: JSON) -> list[str]:
    """The problems of one component file: a schema violation, then ids and components that do not add up."""
    import fastjsonschema

    try:
        _validator()(data)
    except fastjsonschema.JsonSchemaValueException as err:
        where = "/".join(str(p) for p in (err.path or [])[1:]) or "(top)"
        return [f"{path.name}: {where}: {err.message[:300]}"]
    problems = []
    if path.stem != data["component"]:
        problems.append(f"{path.name}: component {data['component']!r} does not match the file name")
    seen: set[str] = set()
    for i, entry in enumerate(data["entries"]):
        expected = f"{entry['component']}:{hashlib.sha1((entry['kind'] + entry['text']).encode()).hexdigest()[:12]}"
        if entry["id"] != expected or entry["component"] != data["component"]:
            problems.append(f"{path.name}: entries/{i}: id {entry['id']!r} is not {expected!r} of its component")
        if entry["id"] in seen:
            problems.append(f"{path.name}: entries/{i}: id {entry['id']!r} appears twice")
        seen.add(entry["id"])
    return problems


FIELDS = tuple(Entry.__dataclass_fields__)
FORMAT = 1  # of the cached rows: bump when Entry's fields change
Row: TypeAlias = tuple[object, ...]  # an Entry's field values in FIELDS order, as the cache keeps them


def _row(raw: JSONObject) -> Row:
    return tuple(tuple(raw[name]) if name in ("literals", "keys") else raw[name] for name in FIELDS)


def _entry(row: Row) -> Entry:
    """An Entry from a checked row, without the frozen dataclass's per-field __init__ (28 000 of them)."""
    entry = Entry.__new__(Entry)
    entry.__dict__.update(zip(FIELDS, row, strict=True))
    return entry


def _rows(files: list[tuple[Path, bytes]]) -> list[Row]:
    """Every entry of the component files as a row, checked; every problem of every file in one RuleError."""
    rows: list[Row] = []
    problems: list[str] = []
    for path, blob in files:
        try:
            data = json.loads(blob)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(f"{path.name}: not JSON: {err}")
            continue
        if found := _check(path, data):
            problems += found
            continue
        rows += [_row(raw) for raw in data["entries"]]
    if problems:
        raise RuleError("catalogue:\n" + "\n".join(problems))
    return rows


def load_folder(folder: Path, use_cache: bool = True) -> Catalogue:
    """The catalogue of the component files in `folder`: checked, or read back from the user's cache when the
    same bytes were checked before."""
    try:
        files = [(path, path.read_bytes()) for path in sorted(folder.glob("*.json"))]
    except OSError as err:
        raise RuleError(f"catalogue: {err}") from err
    digest = hashlib.sha256(f"{FORMAT}\0{FIELDS}\0{sorted(CATEGORIES)}\0".encode())
    for path, blob in files:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(blob).digest())
    key = digest.hexdigest()[:32]
    rows = cached("catalogue", key) if use_cache else None
    if not isinstance(rows, list):
        rows = _rows(files)
        if use_cache:
            store("catalogue", key, rows)
    entries = [_entry(row) for row in rows]
    by_class: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == "exception":
            by_class.setdefault(entry.text, entry)
    return Catalogue(tuple(entries), {entry.id: entry for entry in entries}, by_class)


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    """The packaged catalogue, once per process; a broken file is a RuleError."""
    return load_folder(catalogue_dir())
