"""The JSON view: the report contract, exact text, safe to print to a terminal or to paste.

The contract is schema flinkdoctor.report/v1 (schemas/report.schema.json) at minor version CONTRACT_VERSION:
a minor version only adds optional fields and sections (1.1: checkpoints, config_audit), so a reader of 1.0
reads 1.1 unchanged. The history is in report.py's docstring.
"""

from __future__ import annotations

import json
import re

from ..report.model import CONTRACT_VERSION, SCHEMA, Report

__all__ = ["CONTRACT_VERSION", "SCHEMA", "render_json"]

# JSON may carry these raw inside strings; a terminal may act on them (C1 controls such as CSI, DEL, line and
# paragraph separators, bidi overrides). Escaped as \uXXXX, the parsed strings stay the same.
_RAW_UNSAFE = re.compile("[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def render_json(report: Report) -> str:
    text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
