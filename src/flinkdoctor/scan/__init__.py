"""The scan (Spark tasks over byte ranges of the staged files): lines, headers and events, the prefilter, the
rules' matches and the metrics' measures, written as the events table."""
