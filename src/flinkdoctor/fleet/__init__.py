"""Fleet: many job bundles diagnosed in one Spark application, kept in a Parquet lake, with every job's answer
and the causes shared by jobs on one resource beyond the fleet's background named as incidents.

discover (bundles under the roots, content hashes) -> run (ingest all, one events and one findings pass,
correlation per bundle) -> lake (Parquet tables) -> sightings -> incidents (scored by score.py) -> report ->
views (terminal.py, JSON, HTML); query.
"""
