"""Ideas as idea generators write them: one module per layout, `auto` recognising each, one read report."""

from service.ideas.reader import FORMATS, mapping_named, read_files, read_path, unpack
from service.ideas.records import LayoutError, ReadIdea, ReadResult, Refusal, SourceFile

__all__ = ["FORMATS", "LayoutError", "ReadIdea", "ReadResult", "Refusal", "SourceFile",
           "mapping_named", "read_files", "read_path", "unpack"]
