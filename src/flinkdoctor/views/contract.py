"""The JSON view: the report contract, exact text, safe to print to a terminal or to paste.

The contract is schema flinkdoctor.report/v1 (schemas/report.schema.json) at minor version CONTRACT_VERSION:
a minor version only adds optional fields and sections, so a reader of an earlier minor version reads a later
one unchanged. The history is in CHANGELOG.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..report.model import CONTRACT_VERSION, SCHEMA, Report
from .sentences import checkpoint_sentences

__all__ = ["CONTRACT_VERSION", "SCHEMA", "contract", "render_json"]

# JSON may carry these raw inside strings; a terminal may act on them (C1 controls such as CSI, DEL, line and
# paragraph separators, bidi overrides). Escaped as \uXXXX, the parsed strings stay the same.
_RAW_UNSAFE = re.compile("[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def contract(report: Report) -> dict[str, Any]:
    """The report as the JSON contract: its data (`Report.to_dict()`), and per job the sentences about its
    checkpoints (`summary`, required by v1), which this view writes from the numbers."""
    data = report.to_dict()
    for job in (data.get("checkpoints") or {}).get("jobs", []):
        job["summary"] = checkpoint_sentences(job)
    return data


def render_json(report: Report) -> str:
    text = json.dumps(contract(report), indent=2, ensure_ascii=False)
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
