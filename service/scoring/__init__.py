"""Scoring ideas as a stored run, one module per step: plan (the window a request scores in), answer (shaping the
matcher's decisions into the answer), store (the run's scores and matches, and the columns a stored match of either
side shares), flow (the one flow `hindsight score` and POST /v1/score share, walking those steps and prior art's).

The decision itself is indexing.matcher. This package imports nothing at import time: a step imports the module it
needs (prior art's modules import store and answer; flow imports prior art)."""
