"""What the CLI prints quotes paths, ids, titles and messages as they are: brackets in them ("[draft]", "[/b]") are
text, never console markup that is dropped or that breaks the command."""

import json

from tests.factories import sample_version


def flat(output: str) -> str:
    """The output without whitespace: the console wraps long lines wherever it likes."""
    return "".join(output.split())


def test_a_rejected_files_path_and_fields_print_as_they_are(run_cli_here, tmp_path):
    folder = tmp_path / "papers[draft]"
    folder.mkdir()
    bad = folder / "[v2] papers.jsonl"
    bad.write_text('{"id": "x[/b]", "title": "T", "publication_date": "yesterday"}\n', encoding="utf-8")
    got = run_cli_here("ingest", str(bad))
    assert got.exit_code == 1, got.output
    assert f"{folder.name}/[v2]papers.jsonl:1:field'publication_date'" in flat(got.output)

    scores = folder / "[verifier].csv"
    scores.write_text("idea_id,judge,novelty\n[/i],[q] judge,eleven\n", encoding="utf-8")
    got = run_cli_here("judge", "import", str(scores))
    assert got.exit_code == 1, got.output
    assert "rejected:" in got.output and "papers[draft]/[verifier].csv" in flat(got.output)


def test_ideas_whose_ids_look_like_markup_are_scored_and_printed(settings, minilm, run_cli_here, tmp_path):
    sample_version(settings.home, minilm, 60)
    ideas = tmp_path / "ideas.jsonl"
    rows = [{"id": "[/b] closing", "problem": "Retrieval for long documents.", "method": "[bold]Rerank[/bold] it."},
            {"id": "[bold]open", "problem": "Graph learning", "method": "Transformers"}]
    ideas.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    got = run_cli_here("score", str(ideas), "--run", "[draft]")
    assert got.exit_code == 0, got.output
    assert "[/b]closing" in flat(got.output) and "[bold]open" in flat(got.output)
    assert "/[draft]" in flat(got.output)  # the run's name in the table's title
