"""Reliability suite: faults, load and hostile input (fast subset by default, HINDSIGHT_RELIABILITY_FULL=1 for all)."""
