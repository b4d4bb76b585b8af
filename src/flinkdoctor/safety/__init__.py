"""Text safety, in one place: secrets masked (masking.py) and input text made inert for a terminal (inert.py)."""
