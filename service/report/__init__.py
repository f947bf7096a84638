"""`hindsight report` and GET /v1/report: the evaluation of chosen runs as one self-contained HTML or Markdown file.

gather.py collects the figures from the analyses' own functions, provenance.py what they were made with, svg.py
draws the plots as inline SVG, html.py and markdown.py render, files.py writes a report (and its plots) to disk.
"""
