"""The emulator reads every current cookbook cell's server flags as SGLang 0.5.23's parser does
(issue 41 item 6): it accepts each flag that release accepts, under ServerArgs' own name, and refuses
with SGLang's own words what its parser refuses; it serves the DSPARK overlay as SGLang resolves it
(/server_info, the 48-request limit, the accept length of its latency model)."""

from __future__ import annotations

from typing import Any

import pytest

from kimi_runbooks.emulator.cli import parse_launch, parse_settings
from kimi_runbooks.emulator.prometheus import Metrics
from kimi_runbooks.emulator.server_info import server_info

from ..support.cookbook_cells import CellCommand, cell_commands

SGLANG_REFUSES = {
    "--cuda-graph-max-bs": "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
    "--cuda-graph-max-bs-prefill",
}
"""What SGLang 0.5.23's own parser refuses among the current cells (check_server_argv.py run on every
cell): the Kimi-K3 MI350X/MI355X balanced cells' --cuda-graph-max-bs, a prefix of two 0.5.23 options.
tests/contract/test_emulator_argv.py holds the emulator to SGLang itself on every cell."""

COMMANDS = cell_commands()
K3_DSPARK = ["--model", "moonshotai/Kimi-K3", "--model-path", "moonshotai/Kimi-K3", "--speculative-algorithm", "dspark"]
K3_DSPARK += ["--speculative-dspark-block-size", "7", "--speculative-draft-model-path", "RadixArk/Kimi-K3-DSpark"]


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        parse_launch(args)
    assert stop.value.code == 2  # argparse's usage error, as SGLang's parser exits
    return capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.label)
def test_the_emulator_reads_each_current_cell_as_sglang_0_5_23(
    command: CellCommand, capsys: pytest.CaptureFixture[str]
) -> None:
    refusal = next((said for flag, said in SGLANG_REFUSES.items() if flag in command.flags), None)
    if refusal is not None:
        err = _refused(command.emulator_args(), capsys)
        assert refusal in err and "fix:" in err, err
        return
    _, _, launch_args, speculative = parse_launch(command.emulator_args())
    flags = command.flags
    tp = next(flags[i + 1] for i, f in enumerate(flags) if f in ("--tp", "--tp-size"))
    assert launch_args["tp_size"] == int(tp)  # --tp reaches ServerArgs' tp_size, typed
    assert launch_args["trust_remote_code"] is True
    if "--speculative-algorithm" in flags:
        block = launch_args.get("speculative_dspark_block_size")
        if launch_args["speculative_algorithm"].upper() == "DSPARK":
            assert speculative["speculative_num_draft_tokens"] == (block or 7) + 1
    else:
        assert speculative == {}


def test_the_refused_cells_are_the_mi35x_cells_with_cuda_graph_max_bs() -> None:
    refused = {c.label.split(" (")[0] for c in COMMANDS if "--cuda-graph-max-bs" in c.flags}
    assert refused and all(label.startswith(("kimi-k3-mi350x", "kimi-k3-mi355x")) for label in refused), refused
    assert len(COMMANDS) > 150  # every K3 and K2.6 cell, each node of each role


def test_a_flag_sglang_lacks_or_a_bad_value_is_refused_as_its_parser_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert "unrecognized arguments: --tensor-paralel-size" in _refused(["--tensor-paralel-size", "8"], capsys)
    assert "argument --enable-metrics=1: --enable-metrics is a switch" in _refused(["--enable-metrics=1"], capsys)
    assert "takes a whole number; 'many'" in _refused(["--max-mamba-cache-size", "many"], capsys)
    said = _refused(["--attention-backend", "flashmla2"], capsys)
    assert "argument --attention-backend: invalid choice: 'flashmla2'" in said
    _, _, args, _ = parse_launch(
        ["--tp", "8", "--ep", "8", "--speculative-draft-model", "d", "--no-enable-tf32-matmul"]
    )
    assert args == {"tp_size": 8, "ep_size": 8, "speculative_draft_model_path": "d", "enable_tf32_matmul": False}


def test_the_dspark_overlay_is_served_as_sglang_resolves_it() -> None:
    settings, _ = parse_settings([*K3_DSPARK, "--enable-linear-replayssm-spec"])
    info: dict[str, Any] = server_info(settings, 0.0, 0.0)
    assert info["speculative_algorithm"] == "DSPARK"  # upper-cased (handle_speculative_decoding)
    assert info["speculative_dspark_block_size"] == 7
    assert info["speculative_num_draft_tokens"] == 8  # gamma + 1 (_handle_dspark)
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"]) == (1, 1)
    assert info["speculative_draft_model_path"] == "RadixArk/Kimi-K3-DSpark"
    assert info["enable_linear_replayssm_spec"] is True
    assert info["max_running_requests"] == 48  # no --max-running-requests under speculative decoding
    told, _ = parse_settings([*K3_DSPARK, "--max-running-requests", "96"])
    assert server_info(told, 0.0, 0.0)["max_running_requests"] == 96


def test_dspark_values_sglang_refuses_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    said = _refused([*K3_DSPARK, "--speculative-num-draft-tokens", "4"], capsys)
    assert "DSpark speculative_num_draft_tokens must equal gamma + 1 (= 8 for gamma=7)" in said
    assert "block-size to be positive, got 0" in _refused([*K3_DSPARK, "--speculative-dspark-block-size", "0"], capsys)


def test_the_latency_model_divides_decode_by_the_dspark_accept_length() -> None:
    cells = {c.label: c for c in COMMANDS}
    spec, _ = parse_settings(cells["kimi-k3-b300-unified-balanced-dspark"].emulator_args())
    plain, _ = parse_settings(cells["kimi-k3-b300-unified-balanced-none"].emulator_args())
    assert spec.profile.spec_accept_length == 2.5  # perfmodel DEFAULT_ACCEPT_LENGTH: assumed, none published
    assert plain.profile.spec_accept_length == 0.0
    # the Non-Spec launch is timed without the overlay (before, both took the plan's default: DSPARK)
    assert plain.profile.itl_table[0][0] > 1.5 * spec.profile.itl_table[0][0]
    assert server_info(spec, 0.0, 0.0)["internal_states"][0]["avg_spec_accept_length"] == 2.5
    assert "avg_spec_accept_length" not in server_info(plain, 0.0, 0.0)["internal_states"][0]
    body = Metrics(model_name="m", spec_accept_length=spec.profile.spec_accept_length).render(0, 0, 0.0, 0)
    assert any(line.startswith("sglang:spec_accept_length{") and line.endswith(" 2.5") for line in body.splitlines())
