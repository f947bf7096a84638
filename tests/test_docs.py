"""The configuration page names every setting, so a new one cannot go undocumented."""

import re

from indexing.settings import Settings
from tests.helpers import ROOT


def test_every_setting_has_a_row_in_the_configuration_page():
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(HINDSIGHT_[A-Z0-9_]+)` \|", page, flags=re.M))
    assert documented == {f"HINDSIGHT_{name.upper()}" for name in Settings.model_fields}
