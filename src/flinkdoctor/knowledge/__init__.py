"""The knowledge base: the rules (rules/, loaded and checked by rulebook.py), the closed vocabularies, the
regex checks, Flink versions, and the data files beside them (exceptions, metrics, configuration keys)."""
