"""The report: one typed model of a diagnosis (model.py); views/ render it."""
