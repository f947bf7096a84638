"""The command line starts fast: `hindsight --help` imports no command module and none of the heavy libraries, and
each command imports what it uses (docs/startup.md)."""

import inspect
import json
import subprocess
import sys

import pytest

from service.cli import Commands, app
from service.cli.lazy import Unloaded, load
from tests.helpers import ROOT, clean_env

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


def test_help_imports_no_command_module_and_no_heavy_library(tmp_path):
    found = loaded_after("from service.cli import main\nmain()", tmp_path, "--help")
    assert found["code"] == 0
    assert found["heavy"] == [] and found["cli"] == []
    for name in Commands.table:
        assert name in found["stdout"]


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
