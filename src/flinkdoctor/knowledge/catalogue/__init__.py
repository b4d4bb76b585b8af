"""The failure catalogue: what Flink and the libraries it runs with can say on a failure path, from their code.

Each entry is a message format that the code throws, logs at WARN or above, or prints before it exits, or an
exception class it defines; with a regex that finds it in a log line, the literals a prefilter needs, the
category it points to and why, where it was read and in which versions. The data beside this file is generated
by tools/catalogue from the sources (docs/catalogue.md says how, and what it covers): edit the tool or its
mapping, never the JSON.

`load_catalogue()` reads every component file once per process, validates it against
schemas/catalogue.schema.json (categories from vocabulary.py) and checks each id; a broken file is a RuleError
naming the file and the entry. The checked catalogue is kept in the user's cache (userstate.py) under a digest
of the files, so a run with unchanged files skips the schema check.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ...errors import RuleError
from ...runtime.userstate import cached, store
from ..validation import schema
from ..vocabulary import CATEGORIES

FORMAT = 1  # bump when Entry changes: the cached catalogue of an older format is not read


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


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def _digest(files: list[Path]) -> tuple[str, list[bytes]]:
    digest = hashlib.sha256(f"catalogue-{FORMAT}".encode())
    digest.update(json.dumps(sorted(CATEGORIES)).encode())
    digest.update(schema_text().encode())
    blobs = []
    for path in files:
        data = path.read_bytes()
        blobs.append(data)
        digest.update(path.name.encode() + b"\0" + data)
    return digest.hexdigest()[:32], blobs


@lru_cache(maxsize=1)
def schema_text() -> str:
    return json.dumps(schema("catalogue"), sort_keys=True)


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    full = json.loads(schema_text())
    full["$defs"]["category"] = {"enum": list(CATEGORIES)}
    return jsonschema.Draft202012Validator(full)


def _check(path: Path, data) -> list[str]:
    """Every problem of one component file: schema violations, then ids and components that do not add up."""
    problems = []
    for error in sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(map(str, error.absolute_path)) or "(top)"
        problems.append(f"{path.name}: {where}: {error.message[:200]}")
    if problems or not isinstance(data, dict):
        return problems
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


def _build(files: list[Path], blobs: list[bytes], validate: bool) -> Catalogue:
    entries: list[Entry] = []
    problems: list[str] = []
    for path, blob in zip(files, blobs, strict=True):
        try:
            data = json.loads(blob)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(f"{path.name}: not JSON: {err}")
            continue
        if validate and (found := _check(path, data)):
            problems += found
            continue
        for raw in data["entries"]:
            entries.append(
                Entry(**{**raw, "literals": tuple(raw["literals"]), "keys": tuple(raw["keys"])})
            )
    if problems:
        raise RuleError("catalogue:\n" + "\n".join(problems))
    by_id = {entry.id: entry for entry in entries}
    by_class: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == "exception":
            by_class.setdefault(entry.text, entry)
    return Catalogue(tuple(entries), by_id, by_class)


def load_folder(folder: Path, use_cache: bool = True) -> Catalogue:
    """The catalogue of the component files in `folder`, checked (or taken from the user's cache, same bytes)."""
    files = _files(folder)
    key, blobs = _digest(files)
    if use_cache and isinstance(found := cached("catalogue", key), Catalogue):
        return found
    catalogue = _build(files, blobs, validate=True)
    if use_cache:
        store("catalogue", key, catalogue)
    return catalogue


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    """The packaged catalogue, once per process; a broken file is a RuleError."""
    return load_folder(catalogue_dir())
