"""The `hindsight` command line."""

import typer

app = typer.Typer(help="HindSight: judge research-idea generators by the future.", no_args_is_help=True)


def main() -> None:
    app()
