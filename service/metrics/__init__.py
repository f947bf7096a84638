"""Metrics of neighbouring benchmarks: plain functions over gold labels and predictions."""
