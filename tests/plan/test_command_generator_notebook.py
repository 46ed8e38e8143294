"""The command generator notebook executes headlessly and prints the plan of its parameters."""

import nbformat

from kimi_runbooks.generator import predicted_text
from kimi_runbooks.paths import REPO_ROOT
from tests.support import run_notebook

ROOT = REPO_ROOT


def _text(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def _generate(tmp_path, name: str = "cg", **parameters) -> str:
    """Run the command generator headlessly with these parameters; the text it printed."""
    out = tmp_path / f"{name}.ipynb"
    run_notebook(
        str(ROOT / "notebooks/command_generator.ipynb"),
        str(out),
        parameters=parameters,
    )
    return _text(nbformat.read(out, as_version=4))


def test_headless_run_prints_the_default_command(tmp_path):
    text = _generate(tmp_path)
    # the K2.6 page's H200 cell (1d8c2d38), in its order, with the Parsers row on
    assert (
        "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K2.6 --tp 8 --reasoning-parser kimi_k2" in text
    )
    assert "verdict: VALID" in text
    # the predicted speed of that plan, labelled as a prediction, for the default scenarios
    predicted = text.split("## predicted speed (PREDICTED by kimi_runbooks.perfmodel, not measured)", 1)[1]
    assert "nvidia-hopper, 8 devices" in predicted
    assert [ln.split()[2] for ln in predicted.splitlines() if ln.strip().startswith("1000")] == ["c=1", "c=16", "c=64"]


def test_invalid_parameters_show_errors_inline(tmp_path):
    text = _generate(tmp_path, platform="mi350x", tp=8)
    assert "INVALID" in text and "amd-aiter-mla-heads" in text
    assert "## predicted speed: not predicted, the plan is invalid" in text


def test_devices_is_a_parameter_and_an_eight_gpu_amd_node_shows_the_replica_alternative(tmp_path):
    text = _generate(tmp_path, platform="mi300x")
    assert "HIP_VISIBLE_DEVICES=0,1,2,3" in text and "2 replicas of tp 4 (--dp 2): VALID" in text
    text4 = _generate(tmp_path, "cg4", platform="mi300x", devices=4)
    assert "verdict: VALID" in text4 and "VISIBLE_DEVICES" not in text4 and "alternatives" not in text4


def test_predicted_text_says_why_it_cannot_predict():
    assert predicted_text({"platform": "h200"}, "in=1000").startswith("## predicted speed: not predicted: --predict")
    assert predicted_text({"platform": "no-such-platform"}).startswith("## predicted speed: not predicted: ")


def test_predict_is_a_parameter_papermill_can_set(tmp_path):
    """papermill skips a parameter whose default holds '=' ("Unable to parse"), so the default is
    None (meaning DEFAULT_PREDICT) and a spec passed with -p predict still reaches the cell."""
    text = _generate(tmp_path, platform="h200", predict="in=2000,out=500,c=8")
    rows = [ln.split() for ln in text.splitlines() if ln.strip().startswith("2000")]
    assert [r[:3] for r in rows] == [["2000", "500", "c=8"]]


def test_a_bad_value_reads_as_field_and_reason():
    """A bad parameter in the command generator names the field, without pydantic's banner and URL."""
    from kimi_runbooks.plan import plan_text

    for text in (plan_text({"platform": "mi300x", "devices": 0}), predicted_text({"platform": "mi300x", "devices": 0})):
        assert "devices: Input should be greater than or equal to 1" in text
        assert "validation error for" not in text and "errors.pydantic.dev" not in text
