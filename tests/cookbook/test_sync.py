"""`kimi-runbooks cookbook sync` on two kept revisions of the Kimi-K3 page (0722c4c0 -> f795573d):
the revision is kept, the recipes regenerated, and the diff printed cell by cell."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kimi_runbooks.cli import main
from kimi_runbooks.cookbook.kept_files import load_generated, read_sources

from .conftest import K3_NEW, K3_SEED

SEED_ONLY = f"""pages:
  kimi-k3:
    path: docs_new/src/snippets/configs/moonshotai/kimi-k3.jsx
    page_computes: [mamba_full_memory_ratio]
    revisions:
      - commit: {K3_SEED}
        file: sources/kimi-k3@0722c4c0.jsx
        page_computes: []
"""


@pytest.fixture
def seed_params(tmp_path: Path, params_dir: Path) -> Path:
    """A params folder that keeps only the seed revision of the K3 page."""
    book = tmp_path / "cookbook"
    (book / "sources").mkdir(parents=True)
    (book / "generated").mkdir()
    shutil.copy(params_dir / "cookbook/sources/kimi-k3@0722c4c0.jsx", book / "sources")
    shutil.copy(params_dir / "cookbook/generated/kimi-k3@0722c4c0.yaml", book / "generated")
    (book / "sources.yaml").write_text(SEED_ONLY, encoding="utf-8")
    return tmp_path


def test_sync_keeps_the_new_revision_and_prints_the_cell_diff(
    seed_params: Path, params_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new_file = params_dir / "cookbook/sources/kimi-k3@f795573d.jsx"
    code = main(["cookbook", "sync", "--from", str(new_file), "--commit", K3_NEW, "--params-dir", str(seed_params)])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "kimi-k3: 0722c4c0 -> f795573d"
    assert "  hardware added: b200, gb200, h100, mi350x, mi355x" in lines
    assert "  image h200: lmsysorg/sglang:dev -> lmsysorg/sglang:kimi-k3" in lines
    assert "  image gb300: lmsysorg/sglang:dev-cu130 -> lmsysorg/sglang:kimi-k3" in lines
    assert "  default speculative overlay: (none) -> dspark" in lines

    def block(title: str) -> list[str]:
        start = lines.index(title) + 1
        end = next((i for i in range(start, len(lines)) if not lines[i].startswith("      ")), len(lines))
        return lines[start:end]

    assert block("  ~ cell h200 unified balanced") == [
        "      verified: yes -> no",
        "      image: lmsysorg/sglang:dev -> lmsysorg/sglang:kimi-k3",
        "      flag removed: --tp 16",
        "      flag removed: --cuda-graph-max-bs 64",
        "      flag added: --tp-size 16",
        "      flag added: --speculative-algorithm DSPARK",
        "      flag added: --speculative-draft-model-path RadixArk/Kimi-K3-DSpark",
        "      flag added: --speculative-dspark-block-size 7",
        "      flag added: --enable-linear-replayssm-spec",
        "      flag changed: --mamba-full-memory-ratio 0.9 -> 0.43",
        "      env removed: SGLANG_K3_ATTN_RES_MODE=jit",
        "      env removed: SGLANG_MOE_FUSED_GATE_RADIX=1",
    ]
    gb300_ht = block("  ~ cell gb300 unified high-throughput")
    assert "      flag removed: --moe-a2a-backend megamoe" in gb300_ht
    assert "      flag removed: --max-total-tokens 620000" in gb300_ht
    assert "      flag added: --dcp-size 8" in gb300_ht
    assert "      env removed: SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK=20480" in gb300_ht
    assert (
        "      flag changed: --speculative-draft-model-path moonshotai/Kimi-K3-DSpark -> RadixArk/Kimi-K3-DSpark"
        in block("  ~ cell b300 unified low-latency")
    )
    assert "  + cell h100 unified balanced (4 nodes, verified no)" in lines
    assert "  + cell b200 unified long-context (2 nodes, verified no)" in lines
    assert "  + cell gb300 decode balanced (2 nodes, verified no)" in lines
    assert "  + cell b300 prefill default (1 node, verified no)" in lines
    assert not [line for line in lines if line.startswith("  - cell")]  # no cell of 0722c4c0 was dropped

    kept = read_sources(seed_params)["pages"]["kimi-k3"]["revisions"]
    assert [r["commit"] for r in kept] == [K3_NEW, K3_SEED]  # the new revision first: the plan's default
    assert (seed_params / "cookbook/sources/kimi-k3@f795573d.jsx").read_bytes() == new_file.read_bytes()
    assert load_generated(seed_params, "kimi-k3", K3_NEW) == load_generated(params_dir, "kimi-k3", K3_NEW)


def test_sync_of_a_file_with_no_commit_says_how_to_give_it(
    seed_params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "kimi-k3.jsx"
    bare.write_text("export const config = { cells: [] };\n", encoding="utf-8")
    assert main(["cookbook", "sync", "--from", str(bare), "--params-dir", str(seed_params)]) != 0
    assert "Fix: pass --commit <sha>" in capsys.readouterr().err


def test_sync_of_a_file_that_is_no_config_module_names_it(
    seed_params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "kimi-k3@abcdef12.jsx"
    broken.write_text("export const KimiK3Deployment = () => { const config = <div/>; };\n", encoding="utf-8")
    assert main(["cookbook", "sync", "--from", str(broken), "--params-dir", str(seed_params)]) != 0
    err = capsys.readouterr().err
    assert f"node could not read {broken}" in err and "Fix: pass the config file itself" in err
    assert read_sources(seed_params)["pages"]["kimi-k3"]["revisions"][0]["commit"] == K3_SEED  # nothing kept
