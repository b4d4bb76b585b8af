"""The runtime around the pipeline: the Spark session (local, submitted or the warm path's server), the JVM's
start-up, the work dir flinkdoctor owns, and the per-user state folder."""
