"""Fetch papers from OpenAlex and Semantic Scholar: paging, retries, checkpoints, raw pages, citation refresh."""
