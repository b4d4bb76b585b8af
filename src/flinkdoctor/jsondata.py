"""The one name for data read from YAML or JSON before it becomes typed objects.

Such data is checked by its JSON schema at the edge (knowledge/validation.py, the report schema), not by the type
checker: past the edge it is turned into dataclasses and trusted. `JSON` says where that boundary runs.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JSON: TypeAlias = Any  # a parsed YAML/JSON value whose shape its schema, not its type, guarantees
JSONObject: TypeAlias = dict[str, JSON]  # a parsed YAML mapping or JSON object
