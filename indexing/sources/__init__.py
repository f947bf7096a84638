"""Paper sources: readers, formats and the normalised record."""
