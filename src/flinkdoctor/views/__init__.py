"""Views of the one report model: the JSON contract and the terminal. Each view makes input text safe for
its own medium (JSON: exact but escaped; terminal: control characters shown, never markup)."""

from .contract import render_json
from .terminal import render_terminal

__all__ = ["render_json", "render_terminal"]
