"""The configuration page names every setting, so a new one cannot go undocumented."""

import re

from indexing.settings import Settings
from tests.helpers import ROOT


def test_every_setting_has_a_row_in_the_configuration_page():
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(HINDSIGHT_[A-Z0-9_]+)` \|", page, flags=re.M))
    missing = [(name, f) for name, f in Settings.model_fields.items() if f"HINDSIGHT_{name.upper()}" not in documented]
    rows = "\n".join(f"| `HINDSIGHT_{name.upper()}` | ... | `{f.default}` | {f.description or ''} |"
                     for name, f in missing)
    assert not missing, f"docs/configuration.md lacks these settings:\n{rows}"
    assert documented <= {f"HINDSIGHT_{name.upper()}" for name in Settings.model_fields}, "a row names no setting"
