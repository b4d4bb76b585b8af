"""The failure catalogue compiler: `python -m tools.catalogue` (see __main__.py and docs/catalogue.md)."""
