"""Intake: drop files -> accepted events and rejected lines (pure Python, Spark-free)."""
