"""Device telemetry from the vendors' tools, driven by fake smi executables printing their formats;
energy per token checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed import efficiency, telemetry
from tests.support import FAKES


def test_nvidia_smi_devices_and_na_power(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_POWER_NA", "1")
    devices = telemetry.read_devices("nvidia-smi")
    assert len(devices) == 8
    assert devices[0].power_w is None  # "[N/A]" is missing, never zero
    assert devices[1] == telemetry.DeviceSample("1", 612.34, 100.0, 0.0, 143771.0, 61.0)


@pytest.mark.parametrize("shape", ["gpu_data", "list"])
def test_amd_smi_both_json_shapes(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str) -> None:
    monkeypatch.setenv("FAKE_AMD_SHAPE", shape)
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    devices = telemetry.read_devices("amd-smi")
    assert devices == [
        telemetry.DeviceSample("0", 542.0, 87.0, 121344.0, 196592.0, 70.0),
        telemetry.DeviceSample("1", 542.0, 87.0, 121344.0, 196592.0, 71.0),
    ]


def test_rocm_smi_fallback(fake_smi_path: Path) -> None:
    devices = telemetry.read_devices("rocm-smi")
    assert [d.device for d in devices] == ["0", "1", "2", "3"]
    assert devices[0].power_w == 745.0 and devices[0].util_pct == 93.0
    assert devices[0].temp_c == 70.0  # junction, since edge is "N/A"
    assert devices[0].mem_total_mib == pytest.approx(309220868096 / 2**20)


def test_amd_platforms_prefer_amd_smi_then_rocm_smi(fake_smi_path: Path, tmp_path: Path) -> None:
    assert telemetry.find_tool("rocm-smi") == "amd-smi"
    only_rocm = tmp_path / "only-rocm"
    only_rocm.mkdir()
    (only_rocm / "rocm-smi").symlink_to(FAKES / "rocm-smi")
    assert telemetry.find_tool("rocm-smi", {"PATH": str(only_rocm)}) == "rocm-smi"
    assert telemetry.find_tool("nvidia-smi", {"PATH": str(only_rocm)}) is None


def test_npu_smi_a3_power_on_first_chip_only(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    monkeypatch.setenv("FAKE_NPU_CHIPS", "2")
    monkeypatch.setenv("FAKE_NPU_POWER", "350.0")
    devices = telemetry.read_devices("npu-smi")
    assert [d.device for d in devices] == ["0.0", "0.1", "1.0", "1.1"]
    assert [d.power_w for d in devices] == [350.0, None, 350.0, None]
    assert devices[1].util_pct == 37.0 and devices[1].mem_total_mib == 65536.0


def test_failing_tool_gives_no_samples(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_FAIL", "1")
    assert telemetry.read_devices("nvidia-smi") == []
    sampler = telemetry.TelemetrySampler("nvidia-smi")
    sampler.sample_once()
    assert sampler.summary()["samples"] == 0


def test_energy_per_token_by_hand(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """8 devices at 500 W for 3 s (samples at 0, 1, 2, 3 s) is 12 000 J; 4 000 output tokens in
    those 3 s: 3 J per token, and 1 333.3 tok/s at 4 kW is 333.3 tok/s per kW."""
    monkeypatch.setenv("FAKE_GPU_POWER", "500")
    folder = RunFolder.create(tmp_path / "run")
    sampler = telemetry.TelemetrySampler("nvidia-smi", folder=folder, scenario="c16")
    for t in range(4):
        sampler.sample_once(at=float(t))
    summary = sampler.summary()
    assert summary["mean_power_w"] == 4000.0
    assert summary["energy_j"] == pytest.approx(12000, rel=0.01)
    energy = efficiency.energy(summary, output_tokens=4000, output_throughput=4000 / 3)
    assert energy["joules_per_output_token"] == pytest.approx(3.0, rel=0.01)
    assert energy["output_tok_s_per_kw"] == pytest.approx(333.33, rel=0.001)
    assert "measured board power (nvidia-smi)" == energy["energy_source"]
    assert len(folder.telemetry_series("c16").read_text().splitlines()) == 4


def test_energy_skips_samples_without_power() -> None:
    samples = [
        {"t": 0.0, "devices": [{"power_w": 100.0}]},
        {"t": 1.0, "devices": [{"power_w": None}]},
        {"t": 2.0, "devices": [{"power_w": 300.0}]},
    ]
    assert telemetry.energy_joules(samples) == 400.0  # (100 + 300) / 2 x 2 s
    assert telemetry.energy_joules(samples[:1]) is None


def test_sampler_without_tool_says_so() -> None:
    with telemetry.TelemetrySampler(None, note="emulated server: no devices to sample") as sampler:
        pass
    assert sampler.summary() == {"tool": None, "samples": 0, "note": "emulated server: no devices to sample"}


def test_sampler_thread_samples_while_running(fake_smi_path: Path) -> None:
    import time

    with telemetry.TelemetrySampler("nvidia-smi", interval_s=0.05) as sampler:
        time.sleep(0.5)
    summary = sampler.summary()
    assert summary["samples"] >= 2 and summary["devices"] == 8
    assert summary["max_temp_c"] == 67.0


def test_cost_per_million_tokens() -> None:
    """8 devices at $2/h = $16/h; 2 000 tok/s = 7.2 M tok/h: $2.2222 per million output tokens."""
    got = efficiency.cost(2000.0, 8, 2.0, "price parameter")
    assert got["usd_per_million_output_tokens"] == pytest.approx(16 / 7.2)
    assert efficiency.cost(2000.0, 8, None, None) == {}
    assert efficiency.cost(0.0, 8, 2.0, None) == {}
    assert efficiency.cost(2000.0, 8, 2.0, None)["price_source"] == "from price parameter"


def test_only_the_devices_the_plan_pins_are_sampled(
    fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A tp-4 server pinned to GPUs 4-7 of an 8-GPU node: the idle half's power is not the run's."""
    from types import SimpleNamespace

    from kimi_runbooks.speed.argv import BenchTarget
    from kimi_runbooks.speed.observe import observe_for_run, pinned_devices

    monkeypatch.setenv("FAKE_GPU_POWER", "500")
    folder = RunFolder.create(tmp_path / "run")
    assert pinned_devices(folder) is None  # no plan: every device
    folder.save_json(folder.plan, {"device_env": {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}})
    run = SimpleNamespace(
        target=BenchTarget(base_url="http://127.0.0.1:30000"), common={"platform": "h200"}, folder=folder
    )
    config = observe_for_run(run, None, [], False, "local", "nvidia-smi", None, None)
    assert config.pinned_devices == frozenset({"4", "5", "6", "7"})
    assert "devices 4,5,6,7 (the ones the plan pins)" in config.telemetry_where
    sampler = telemetry.TelemetrySampler("nvidia-smi", only=config.pinned_devices)
    sampler.sample_once(at=0.0)
    assert [d["device"] for d in sampler.samples[0]["devices"]] == ["4", "5", "6", "7"]
    assert sampler.summary()["mean_power_w"] == 2000.0  # 4 x 500 W, not 8 x 500 W
    folder.save_json(folder.plan, {"device_env": {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}})
    assert pinned_devices(folder) is None  # npu-smi numbers npu.chip, not logical dies: keep all


# --------------------------------------------------------------------------- issue 25 item 8
# Output shapes as the tools print them in public reports (cited per test); "N/A" and
# "[Not Supported]" are missing values of one field, never a reason to drop the device.


def test_amd_smi_na_sections_keep_the_device() -> None:
    """amd-smi prints "N/A" in place of a whole block a device cannot report (here "usage" and
    "power"); the ROCm 6 list shape, values as {"value", "unit"} and "N/A" strings, as in
    `amd-smi metric -u --json` on a Radeon Pro W7700 (henrygd/beszel issue 737)."""
    text = """[
      {"gpu": 0, "usage": {"gfx_activity": {"value": 42, "unit": "%"}, "umc_activity": {"value": 1, "unit": "%"},
                           "mm_activity": {"value": 0, "unit": "%"},
                           "vcn_activity": [{"value": 0, "unit": "%"}, "N/A"]},
       "power": {"socket_power": {"value": 120, "unit": "W"}, "gfx_voltage": "N/A"},
       "temperature": {"edge": {"value": 51, "unit": "C"}, "hotspot": "N/A", "mem": "N/A"},
       "mem_usage": {"total_vram": {"value": 49136, "unit": "MB"}, "used_vram": {"value": 1024, "unit": "MB"}}},
      {"gpu": 1, "usage": "N/A", "power": "N/A", "temperature": {"edge": "N/A", "hotspot": {"value": 60, "unit": "C"}},
       "mem_usage": {"total_vram": {"value": 49136, "unit": "MB"}, "used_vram": "N/A"}}
    ]"""
    devices = telemetry.parse_amd_smi(text)
    assert devices == [
        telemetry.DeviceSample("0", 120.0, 42.0, 1024.0, 49136.0, 51.0),
        telemetry.DeviceSample("1", None, None, None, 49136.0, 60.0),
    ]


def test_amd_smi_rocm7_shape_with_na_blocks() -> None:
    text = (
        '{"gpu_data": [{"gpu": 0, "usage": "N/A", "power": {"socket_power": "N/A"}, '
        '"temperature": "N/A", "mem_usage": "N/A"}]}'
    )
    assert telemetry.parse_amd_smi(text) == [telemetry.DeviceSample("0")]


def test_rocm_smi_older_numbered_temperature_and_na_power() -> None:
    """Older rocm-smi numbers its sensors: 'Temperature (Sensor #1) (c)' (ROC-smi's rocm_smi.py printed
    'Temperature (Sensor #%d)'); newer ones name them and may print only edge, with the power under
    'Current Socket Graphics Package Power (W)' (rocm-smi-lib 6.2.4 on a Radeon 780M,
    sebhildebrandt/systeminformation PR 960), or 'N/A (Secondary die)' (ROCm/rocm_smi_lib issue 149)."""
    text = """{
      "card0": {"Temperature (Sensor #1) (c)": "47.0", "Average Graphics Package Power (W)": "128.0",
                "GPU use (%)": "100",
                "VRAM Total Memory (B)": "68702699520", "VRAM Total Used Memory (B)": "10485760"},
      "card1": {"Temperature (Sensor edge) (C)": "31.0", "Current Socket Graphics Package Power (W)": "7.222",
                "GPU use (%)": "19", "Unique ID": "N/A"},
      "card2": {"Temperature (Sensor edge) (C)": "N/A", "Temperature (Sensor junction) (C)": "64.0",
                "Average Graphics Package Power (W)": "N/A (Secondary die)", "GPU use (%)": "N/A"}
    }"""
    devices = telemetry.parse_rocm_smi(text)
    assert [d.device for d in devices] == ["0", "1", "2"]
    assert devices[0].temp_c == 47.0 and devices[0].power_w == 128.0 and devices[0].mem_used_mib == 10.0
    assert devices[1] == telemetry.DeviceSample("1", 7.222, 19.0, None, None, 31.0)
    assert devices[2] == telemetry.DeviceSample("2", None, None, None, None, 64.0)


def test_nvidia_smi_not_supported_fields_keep_the_device() -> None:
    """nvidia-smi prints "[Not Supported]" or "[N/A]" for a field the board cannot report (nvidia-smi's
    documentation, --query-gpu; e.g. power.draw on many GeForce and some data-centre boards)."""
    text = "0, [Not Supported], 35, 1024, 81559, 41\n1, 250.12, [N/A], 2048, 81559, [Not Supported]\n"
    assert telemetry.parse_nvidia(text) == [
        telemetry.DeviceSample("0", None, 35.0, 1024.0, 81559.0, 41.0),
        telemetry.DeviceSample("1", 250.12, None, 2048.0, 81559.0, None),
    ]
