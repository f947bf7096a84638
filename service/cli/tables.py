"""Tables that stay readable in a narrow terminal: a table that would cut a header or a cell at the console's width
(rich's ellipsis) is printed as records instead, one block per row with a line per column."""

import io
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

ELLIPSIS = "…"


def _plain(value: Any) -> str:
    return value.plain if isinstance(value, Text) else str(value or "")


def cuts(table: Table, width: int) -> bool:
    """Whether the table rendered at this width shows more ellipses than its headers, cells and title hold."""
    probe = Console(file=io.StringIO(), width=width, markup=False, color_system=None, legacy_windows=False)
    probe.print(table)
    rendered = probe.file.getvalue()  # type: ignore[attr-defined]
    held = _plain(table.title).count(ELLIPSIS) + sum(
        _plain(c.header).count(ELLIPSIS) + sum(_plain(x).count(ELLIPSIS) for x in c.cells) for c in table.columns)
    return rendered.count(ELLIPSIS) > held


def records(table: Table) -> Table:
    """The table as one block per row: each column's header beside the row's cell, both folded, never cut."""
    out = Table(show_header=False, title=table.title, caption=table.caption, show_edge=False)
    out.add_column("field", style="bold", overflow="fold")
    out.add_column("value", overflow="fold")
    headers = [_plain(c.header) or f"column {i}" for i, c in enumerate(table.columns, 1)]
    for i, row in enumerate(zip(*(list(c.cells) for c in table.columns))):
        if i:
            out.add_section()
        for header, cell in zip(headers, row):
            out.add_row(header, cell)
    return out


def fitted(table: Table, width: int) -> Table:
    return records(table) if cuts(table, width) else table


class FittingConsole(Console):
    """A console whose tables fit its width: any that would be cut prints as records."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().print(*(fitted(o, self.width) if isinstance(o, Table) else o for o in objects), **kwargs)
