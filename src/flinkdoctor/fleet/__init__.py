"""Fleet: many job bundles diagnosed in one Spark application, kept in a Parquet lake, with causes that recur
across jobs named as likely shared-infrastructure incidents.

discover (bundles under the roots, content hashes) -> run (ingest all, one events and one findings pass,
correlation per bundle) -> lake (Parquet tables) -> recurrence (shared incidents) -> report (views), query.
"""
