"""Views of the one report model: the JSON contract, the terminal, HTML and Markdown. Each view makes input text
safe for its own medium (JSON: exact but escaped; terminal: control characters shown, never markup; HTML:
autoescaped; Markdown: markup characters escaped, log lines fenced)."""

from .contract import json_chunks, render_json
from .html import render_html
from .markdown import render_markdown
from .terminal import render_terminal

__all__ = ["json_chunks", "render_html", "render_json", "render_markdown", "render_terminal"]
