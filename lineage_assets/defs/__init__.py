"""Dagster wiring. Each module wires one concern; the logic lives in the Spark-free packages."""
