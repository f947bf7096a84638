"""Analyses over stored HindSight scores joined with imported LLM-judge scores."""

from service.analyses.correlations import correlations
from service.analyses.export import TABLES, table_rows, to_csv
from service.analyses.ideas import idea_detail
from service.analyses.quadrants import QUADRANTS, Cut, quadrant_points, quadrants
from service.analyses.selection import AnalysisError, Selection, resolve_runs
from service.analyses.systems import systems_summary

__all__ = ["AnalysisError", "Cut", "QUADRANTS", "Selection", "TABLES", "correlations", "idea_detail", "quadrant_points",
           "quadrants", "resolve_runs", "systems_summary", "table_rows", "to_csv"]
