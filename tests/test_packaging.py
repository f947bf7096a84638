"""A wheel carries every file the packages read at run time, not only their modules."""

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.server


def test_the_wheel_holds_the_package_data(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "pyproject.toml", "indexing", "service"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    data = {name for name in tracked if name.startswith(("indexing/", "service/")) and not name.endswith(".py")}
    assert {"indexing/embedders/thetas.json", "indexing/embedders/int8_calibration.jsonl",
            "service/static/index.html"} <= data
    source = tmp_path / "source"  # the tracked files alone: no build/ left by an earlier wheel to hide a gap
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("hindsight-*.whl")
    assert data <= set(zipfile.ZipFile(wheel).namelist())
