"""PySpark adapter over mqcodec's batch decoders (issue: Spark adapter)."""
