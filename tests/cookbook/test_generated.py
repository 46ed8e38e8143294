"""The generated recipes are what the kept config modules give today (node reads them again), and
the page's composition rules hold on known cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kimi_runbooks.cookbook import mamba_ratio
from kimi_runbooks.cookbook.compose import overlay_compose, page_command, with_nodes
from kimi_runbooks.cookbook.kept import generate
from kimi_runbooks.cookbook.kept_files import generated_path


def test_generated_recipes_are_current(params_dir: Path, sources: dict[str, Any]) -> None:
    for page, info in sources["pages"].items():
        for revision in info["revisions"]:
            kept = yaml.safe_load(generated_path(params_dir, page, revision["commit"]).read_text(encoding="utf-8"))
            assert generate(params_dir, page, revision) == kept, (
                f"run `kimi-runbooks cookbook sync --regenerate` ({page})"
            )


def test_an_overlay_strip_puts_its_own_flag_in_place_and_appends_the_rest() -> None:
    cell = ["--tp-size 8", "--dcp-size 8", "--host {{HOST_IP}}"]
    assert overlay_compose(cell, ["--dcp-size"], ["--enable-hierarchical-cache"]) == [
        "--tp-size 8",
        "--host {{HOST_IP}}",
        "--enable-hierarchical-cache",
    ]
    assert overlay_compose(cell, ["--dcp-size"], ["--dcp-size 4", "--x"]) == [
        "--tp-size 8",
        "--dcp-size 4",
        "--host {{HOST_IP}}",
        "--x",
    ]


def test_the_multi_node_trio_follows_the_last_parallelism_anchor() -> None:
    trio = ["--nnodes 2", "--node-rank {{NODE_RANK}}", "--dist-init-addr {{NODE0_IP}}:20000"]
    assert with_nodes(["--model-path m", "--tp-size 16", "--ep-size 16"], 2) == [
        "--model-path m",
        "--tp-size 16",
        *trio,
        "--ep-size 16",
    ]
    assert with_nodes(["--model-path m", "--x"], 2) == ["--model-path m", *trio, "--x"]
    assert with_nodes(["--model-path m"], 1) == ["--model-path m"]


def test_the_k3_ratio_is_the_calculators() -> None:
    # B300 balanced, DSPARK + ReplaySSM (D folded), DCP 8: 5 slots x 56,171,520 B / ((27648/8 + 1400) x 11264)
    flags = ["--tp-size 8", "--dcp-size 8", "--speculative-algorithm DSPARK", "--enable-linear-replayssm-spec"]
    assert mamba_ratio.page_text(mamba_ratio.ratio(flags, [])) == "5.13"
    assert mamba_ratio.page_text(mamba_ratio.ratio(["--tp-size 8"], [])) == "0.9"  # NOSPEC, extra_buffer: 5 slots
    assert mamba_ratio.page_text(12.04) == "12" and mamba_ratio.page_text(0.3449) == "0.34"


def test_the_decode_role_is_composed_as_the_page_shows_it(k3_new: dict[str, Any]) -> None:
    from kimi_runbooks.cookbook.compose import Recipe

    cell = next(
        c
        for c in k3_new["cells"]
        if (c["hardware"], c.get("role"), c["strategy"], c.get("speculative"))
        == ("h200", "decode", "balanced", "dspark")
    )
    text = page_command(
        Recipe(**cell), {"HOST_IP": "0.0.0.0", "PORT": "30000", "NODE_RANK": "<node-rank>", "NODE0_IP": "<node0-ip>"}
    )
    assert text.splitlines()[:6] == [
        "NCCL_MNNVL_ENABLE=1 \\",
        "NCCL_CUMEM_ENABLE=1 \\",
        "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 \\",
        "GLOO_SOCKET_IFNAME={{NETWORK_IFACE}} \\",
        "NCCL_SOCKET_IFNAME={{NETWORK_IFACE}} \\",
        "SGLANG_HOST_IP={{LOCAL_IP}} \\",
    ]
    assert (
        "  --tp-size 16 \\\n  --nnodes 2 \\\n  --node-rank <node-rank> \\\n  --dist-init-addr <node0-ip>:20000 \\"
        in text
    )
    assert "  --disaggregation-mode decode \\" in text and "  --port 30100 \\" in text
    assert text.endswith("  --enable-linear-replayssm-spec")
