"""`hindsight index build|status|use`."""

from datetime import date

import typer
from rich.table import Table

from indexing.vectorindex.base import IndexUnavailable
from indexing.versions import IndexDamaged, current_version, list_versions, load_version, use_version
from indexing.windows import iso_day
from service.cli.common import JsonOpt, console, fail, print_json, progress_bars, ready_settings

app = typer.Typer(help="Build, inspect and publish index versions.", no_args_is_help=True)


def _date(value: str | None, option: str) -> date | None:
    if not value:
        return None
    try:
        return iso_day(value)
    except ValueError as exc:
        fail(f"{option} {value!r} is not a date ({exc})")


@app.command()
def build(model: str = typer.Option(None, help="Embedder: minilm (offline default) or specter2."),
          cutoff: str = typer.Option(None, help="Window start, YYYY-MM-DD (default 2023-06-01)."),
          until: str = typer.Option(None, help="Window end, YYYY-MM-DD (default 2025-12-31)."),
          theta: float = typer.Option(None, help="Override the model's calibrated threshold."),
          matcher: str = typer.Option(None, help="Default match decision of this version: dense or hybrid "
                                                 "(default: hybrid for minilm, dense for specter2)."),
          engine: str = typer.Option("local", help="Embed in this process (local) or on Ray Data (ray)."),
          address: str = typer.Option(None, help="Ray cluster address (ray://host:10001 or host:6379); "
                                                 "default: a local Ray instance."),
          backend: str = typer.Option(None, help="Vector store: faiss (files in the version folder) or qdrant (a "
                                                 "collection per version); default HINDSIGHT_VECTOR_BACKEND, faiss."),
          qdrant_url: str = typer.Option(None, help="Qdrant server URL (default HINDSIGHT_QDRANT_URL); unset: local "
                                                    "mode in HINDSIGHT_HOME/qdrant, one process at a time."),
          json_out: bool = JsonOpt) -> None:
    """Embed the papers in the window, build a new version, verify it and make it current."""
    from indexing.build import BuildBusy, BuildFailed, build_index

    settings = ready_settings()
    cutoff_day, until_day = _date(cutoff, "--cutoff"), _date(until, "--until")
    try:
        with progress_bars(not json_out) as bars:
            result = build_index(settings, model=model, cutoff=cutoff_day, until=until_day, theta=theta,
                                 progress=bars, engine=engine, address=address, matcher=matcher, backend=backend,
                                 qdrant_url=qdrant_url)
    except (BuildBusy, BuildFailed, IndexDamaged, ValueError) as exc:
        fail(str(exc), 1)
    m = result.manifest
    if json_out:
        print_json({"version": result.version, "seconds": round(result.seconds, 3),
                    "stages": {k: round(v, 3) for k, v in result.stages.items()}, "manifest": m})
        return
    c = m["counts"]
    took = ", ".join(f"{k} {v:.1f}s" for k, v in result.stages.items())
    console.print(f"published {result.version} in {result.seconds:.1f}s ({took}): {c['indexed']} papers "
                  f"indexed ({c['embedded_new']} embedded, {c['embedded_from_cache']} from cache), model {m['model']} "
                  f"theta {m['theta']}, matcher {m['matcher']['default']}, index {m['index']['kind']}, "
                  f"window {m['window']['start']}..{m['window']['end']}; excluded "
                  f"{c['excluded_before_cutoff']} before cutoff, {c['excluded_after_window']} after window",
                  highlight=False)


@app.command()
def status(json_out: bool = JsonOpt) -> None:
    """The current version and its manifest, and the versions on disk."""
    settings = ready_settings()
    versions, current = list_versions(settings.indexes_dir), current_version(settings.indexes_dir)
    out: dict = {"current": current, "versions": versions, "manifest": None, "error": None, "backend_check": None}
    if current:
        try:
            out["manifest"] = load_version(settings.indexes_dir, current).manifest
        except (IndexDamaged, IndexUnavailable) as exc:
            out["error"] = str(exc)
    if out["manifest"]:  # this machine's verdict on the index's backend, as cached: nothing is loaded or probed
        from indexing.embedders import check
        from indexing.embedders.runtime import manifest_backend

        m = out["manifest"]
        out["backend_check"] = check.status(m["model"], manifest_backend(m), m["revision"], settings)
    if json_out:
        print_json(out)
        return
    if not current:
        fail(f"the current pointer is missing; versions on disk: {', '.join(versions)}; publish one with "
             f"`hindsight index use {versions[-1]}`" if versions else
             "no index published yet: run `hindsight index build`", 1)
    if out["error"]:
        others = [v for v in versions if v != current]
        fail(out["error"] + (f"\nother versions on disk: {', '.join(others)}; roll back with "
                             f"`hindsight index use {others[-1]}`" if others else ""), 1)
    m = out["manifest"]
    table = Table("field", "value", title=f"index {current}")
    for key in ("model", "model_id", "revision", "dim", "theta", "cutoff", "created"):
        table.add_row(key, str(m[key]))
    table.add_row("window", f"{m['window']['start']}..{m['window']['end']}")
    table.add_row("index", m["index"]["factory"])
    mb = m.get("matcher") or {"default": "dense"}
    hybrid = mb.get("hybrid") or {}
    table.add_row("matcher", f"{mb['default']}" + (f" (hybrid {hybrid.get('version')} available)" if hybrid else "")
                  + (f"; {mb['warning']}" if mb.get("warning") else ""))
    table.add_row("lexical index", f"{m['lexical']['documents']} documents" if m.get("lexical") else "none")
    bc = out["backend_check"]
    table.add_row("backend check", f"{m.get('backend') or bc['backend']}: {bc['verdict']}" + (
        f" (worst drift {bc['worst']['drift']:.4f} at length {bc['worst']['length']}, {bc['checked_at']})"
        if bc.get("worst") else ""))
    for key, value in m["counts"].items():
        table.add_row(key, str(value))
    table.add_row("citations min/max", f"{m['impact']['citation_min']:g} / {m['impact']['citation_max']:g}")
    snap = m["impact"].get("citation_snapshot")  # absent in manifests written before citation dates
    if snap:
        table.add_row("citations taken", f"{snap['from']}..{snap['to']} ({snap['undated']} undated)")
    table.add_row("versions on disk", ", ".join(versions))
    console.print(table)


@app.command()
def use(version: str = typer.Argument(..., help="A version on disk, e.g. v0003.")) -> None:
    """Make an existing, verified version current (a rollback); a Qdrant version's alias flips with it."""
    settings = ready_settings()
    try:
        use_version(settings.indexes_dir, version)
    except (IndexDamaged, IndexUnavailable) as exc:
        fail(str(exc), 1)
    console.print(f"current index is now {version}")
