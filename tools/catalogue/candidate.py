"""What an extractor found in a source: a message on a failure path, or an exception class."""

from __future__ import annotations

from dataclasses import dataclass

from .template import Template


@dataclass(frozen=True)
class Candidate:
    kind: str  # "message" | "exception"
    text: str  # the format / template / class name as written in the code
    template: Template  # constant parts and holes (for an exception: the class name alone)
    cls: str | None  # the exception class the message is thrown with (None: logged or printed)
    level: str | None  # throw | error | warn | fatal | stderr | exit
    origin: str  # the class (dotted binary name) or source file the candidate comes from, for categories
    where: str  # provenance: jar!class or repo@commit:path:line
    keys: tuple[str, ...] = ()  # configuration keys passed with the message as constant arguments


LEVEL_ORDER = {"throw": 0, "fatal": 1, "error": 2, "exit": 3, "stderr": 4, "warn": 5, None: 6}
