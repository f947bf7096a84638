"""Online side of HindSight: HTTP API, scoring, analyses, benchmark metrics and the CLI."""
