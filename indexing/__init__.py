"""Offline side of HindSight: paper sources, storage, embedders, index build and publish."""
