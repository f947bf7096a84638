"""A command group that imports a command's module only when that command runs.

`hindsight --help` lists every command with its one-line help from a table, without importing the commands'
modules (and what they import: the models, scikit-learn, FAISS, SQLAlchemy); running a command, or asking for its
own --help, imports its module and nothing else (docs/startup.md).
"""

from dataclasses import dataclass
from importlib import import_module
from typing import Any, ClassVar

import typer
from typer.core import DEFAULT_MARKUP_MODE, TyperCommand, TyperGroup
from typer.models import CommandInfo

# the click classes are Typer's own (newer Typer releases carry a copy of click), hence Any in the signatures
Command = Any


@dataclass(frozen=True)
class Lazy:
    """A command in the table: where it lives ("module:attribute", a Typer app or a command function) and the help
    line the group's list shows (tests/test_startup.py checks it against the command's own)."""

    target: str
    help: str


def load(name: str, target: str) -> Command:
    """The click command of a Typer app or a command function, named `name`."""
    module, _, attribute = target.partition(":")
    found: Any = getattr(import_module(module), attribute)
    command: Command
    if isinstance(found, typer.Typer):  # a group even of one command, and no completion options of its own
        command = typer.main.get_group(found)
    else:
        command = typer.main.get_command_from_info(CommandInfo(name=name, callback=found),
                                                   pretty_exceptions_short=True, rich_markup_mode=DEFAULT_MARKUP_MODE)
    command.name = name
    return command


class Unloaded(TyperCommand):
    """A command's stand-in until its module is imported: its name and help line, enough to list it."""


class LazyGroup(TyperGroup):
    """A Typer group whose commands come from `table` (name -> Lazy), imported on first use."""

    table: ClassVar[dict[str, Lazy]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, lazy in self.table.items():  # in the table's order, before any command registered directly
            self.commands.setdefault(name, Unloaded(name, help=lazy.help))
        self.commands.update({n: self.commands.pop(n) for n in list(self.commands) if n not in self.table})

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        """The command about to run (or to print its own help): imported here."""
        if args and isinstance(self.commands.get(args[0]), Unloaded):
            self.commands[args[0]] = load(args[0], self.table[args[0]].target)
        return super().resolve_command(ctx, args)
