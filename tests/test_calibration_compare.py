"""scripts/calibration_compare.py: the per-field tables of docs/calibration-hybrid-refits.md come from the shipped
fits' JSON, whose entries are the registry's, and the page holds what the script prints now."""

import json

from tests.helpers import ROOT, load_script

# (a fit, the fit that replaced it); the second of each of the newest refits is what the registry ships
PAIRS = (("openvino-int8", "openvino-int8-f32"), ("", "bf16-pertext"), ("openvino-int8-f32", "onnx-int8-avx512_vnni"),
         ("openvino-int8-f32", "pair-only-openvino-int8-f32"), ("bf16-pertext", "pair-only-bf16-pertext"),
         ("onnx-int8-avx512_vnni", "pair-only-onnx-int8-avx512_vnni"))
SHIPPED = [new for _, new in PAIRS[3:]]




def figures(name: str) -> dict:
    return json.loads((ROOT / "docs" / f"calibration-hybrid{'-' if name else ''}{name}.json").read_text())


def test_the_json_beside_each_fit_is_its_registry_entry():
    """Save the time written, which the registry takes when the entry is merged into it."""
    registry = json.loads((ROOT / "indexing/matcher/registry/minilm-hybrid.json").read_text())["revisions"]
    for name in SHIPPED:
        entry = figures(name)["entry"]
        assert {**entry, "written": ""} == {**registry[entry["revision"]], "written": ""}


def test_the_refits_page_holds_the_tables_the_script_prints():
    cc = load_script("calibration_compare")
    page = "".join((ROOT / "docs" / f"calibration-hybrid-{name}.md").read_text()
                   for name in ("refits", "pair-only-refits"))
    for old, new in PAIRS:
        lines = cc.compare(figures(old), figures(new))
        assert "\n".join(lines).strip() in page
        kinds = {line.split(" | ")[0].lstrip("| ") for line in lines if line.startswith("| ") and "kind" not in line}
        assert {"paraphrase", "loose", "hard_negative", "vague", "method_swap"} <= kinds


def test_a_cell_names_both_rates_only_where_they_differ():
    cc = load_script("calibration_compare")
    old = {"hybrid": {"loose": {"source_realised": {"value": 0.5}, "recall@1": {"value": 1.0}}},
           "per_field": {"a": {"loose": {"source_realised": {"value": 0.5}, "recall@1": {"value": 1.0}}}}}
    new = json.loads(json.dumps(old))
    new["per_field"]["a"]["loose"]["recall@1"]["value"] = 0.75
    rows = cc.shape_table(old, new)
    assert "| loose | source_realised | 0.500 | 0.500 |" in rows
    assert "| loose | recall@1 | 1.000 -> 0.750 | 1.000 |" in rows
