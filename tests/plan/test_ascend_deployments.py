"""params/deployments/ascend-a3-*.yaml against the seed's shell scripts, flag for flag.

Ground truth: tests/fixtures/seed_commands/ascend/<deployment-id>.sh, the published deployment
script verbatim, then a `# bench:` line and the published bench_serving command verbatim.
The seed's own placeholders are rewritten to the params vocabulary ({model_path}, ...) and the
script is parsed with tests/seedcmd.py; every launch flag, every export in scope, the router
and the benchmark must match the YAML.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
import yaml

from kimi_runbooks.paths import REPO_ROOT
from tests.support import SHARED
from tests.support.params_schema import DATASETS, SCENARIO_FIELDS
from tests.support.seedcmd import Command, find_commands, parse_shell_commands, substitute

ROOT = REPO_ROOT
DEPLOYMENTS = ROOT / "params" / "deployments"
SCENARIOS = ROOT / "params" / "scenarios" / "ascend.yaml"
TARGETS = ROOT / "params" / "references" / "ascend-a3-targets.yaml"
# the public page every Ascend deployment cites (docs/sources.md)
ASCEND_BEST_PRACTICE_URL = "https://docs.sglang.io/docs/hardware-platforms/ascend-npus/best_practice/kimi_k2_6"
FIXTURES = ROOT / "tests" / "fixtures" / "seed_commands" / "ascend"
SEED = SHARED / "seeds" / "002_78a205449ed7d349.txt"
# The seeds live in shared/ beside the checkout (CI copies it there); a user clone may lack them.
SEED_REQUIRED = os.environ.get("CI") == "true"

BENCH_MARKER = "\n# bench:\n"

PLACEHOLDERS = {
    "model_path",
    "draft_model_path",
    "ifname",
    "node_ip",
    "master_ip",
    "node_rank",
    "nnodes",
    "prefill_ip",
    "decode_ip",
}
# the seed's spellings -> the params vocabulary (order matters: indexed forms before bare $i)
SEED_PLACEHOLDERS = [
    (r"\$\{NODE_IPS\[\$i\]\}", "{node_ip}"),
    (r"\$\{NODE_IPS\[0\]\}", "{master_ip}"),
    (r"\$\{P_IP\[\$i\]\}", "{prefill_ip}"),
    (r"\$\{D_IP\[\$i\]\}", "{decode_ip}"),
    (r"<your prefill ip>", "{prefill_ip}"),
    (r"<your decode ip>", "{decode_ip}"),
    (r"<network-interface>", "{ifname}"),
    (r"\$\{MODEL_PATH\}|\$MODEL_PATH\b", "{model_path}"),
    (r"\$\{DRAFT_MODEL_PATH\}|\$DRAFT_MODEL_PATH\b", "{draft_model_path}"),
    (r"\$i\b", "{node_rank}"),
]
# which array of node IPs a role loops over in the seed script
ROLE_ARRAYS = {"mixed": "NODE_IPS", "prefill": "P_IP", "decode": "D_IP"}

DEPLOYMENT_KEYS = {
    "id",
    "title",
    "platform",
    "model",
    "cards",
    "mode",
    "source",
    "host_setup",
    "unset_env",
    "source_scripts",
    "env",
    "roles",
    "router",
    "serve_port",
    "benchmark",
    "targets",
    "dataset_label",
}
ROLE_KEYS = {"name", "nodes", "entrypoint", "env", "args"}
ROUTER_KEYS = {"entrypoint", "args"}
SCENARIO_KEYS = SCENARIO_FIELDS - {
    "matrix",
    "slo",
    "trace",
    "repeats",
    "arrival",
    "search",
    "think_time",
}  # a deployment's benchmark: every other field
# scenario field -> bench_serving flag
SCENARIO_FLAGS = {
    "dataset": "--dataset-name",
    "input_len": "--random-input-len",
    "output_len": "--random-output-len",
    "num_prompts": "--num-prompts",
    "max_concurrency": "--max-concurrency",
    "request_rate": "--request-rate",
    "range_ratio": "--random-range-ratio",
    "seed": "--seed",
    "warmup_requests": "--warmup-requests",
    "backend": "--backend",
}
RUNNER_FLAGS = {"--host", "--port"}  # set by the runner, not stored in the scenario
TARGET_ROW_KEYS = {"deployment", "category", "cards", "mode", "dataset_label", "tpot_ms", "ttft_ms", "quantization"}

DEPLOYMENT_FILES = sorted(DEPLOYMENTS.glob("ascend-*.yaml"))
FIXTURE_FILES = sorted(FIXTURES.glob("*.sh"))


# ---------------------------------------------------------------------------- helpers


def load(path: Path):
    return yaml.safe_load(path.read_text())


def as_strings(value) -> list[str]:
    """An args value the way it appears on a command line: True -> bare flag, list -> words."""
    if value is True:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def args_as_strings(args: dict) -> dict[str, list[str]]:
    return {flag: as_strings(v) for flag, v in args.items()}


def strings_in(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings_in(v)


def split_fixture(dep_id: str) -> tuple[str, str, str]:
    """(raw text, deployment script with params placeholders, bench command with placeholders)."""
    raw = (FIXTURES / f"{dep_id}.sh").read_text()
    assert raw.count(BENCH_MARKER) == 1, f"{dep_id}: expected exactly one '# bench:' line"
    deploy, bench = substitute(raw, SEED_PLACEHOLDERS).split(BENCH_MARKER)
    return raw, deploy, bench


def role_name(cmd: Command) -> str:
    return cmd.flags.get("--disaggregation-mode", ["mixed"])[0]


def node_arrays(script: str) -> dict[str, int]:
    """NAME=('a' 'b') arrays of the script -> number of entries."""
    out = {}
    for m in re.finditer(r"^([A-Z_]+)=\((.*)\)\s*$", script, flags=re.M):
        out[m.group(1)] = len(shlex.split(m.group(2)))
    return out


@pytest.fixture(scope="module")
def scenarios() -> dict[str, dict]:
    doc = load(SCENARIOS)
    assert set(doc) == {"set", "source", "scenarios"}
    ids = [s["id"] for s in doc["scenarios"]]
    assert len(ids) == len(set(ids)), "duplicate scenario ids"
    return {s["id"]: s for s in doc["scenarios"]}


@pytest.fixture(scope="module")
def targets() -> dict[str, dict]:
    doc = load(TARGETS)
    assert {k: doc[k] for k in ("id", "kind", "platform", "model")} == {
        "id": "ascend-a3-targets",
        "kind": "targets",
        "platform": "ascend-a3",
        "model": "kimi-k2.6-w4a8",
    }
    assert doc["source"]
    rows = {}
    for row in doc["rows"]:
        assert set(row) == TARGET_ROW_KEYS
        assert row["deployment"] not in rows, f"two target rows for {row['deployment']}"
        rows[row["deployment"]] = row
    return rows


# ---------------------------------------------------------------------------- seedcmd itself


def test_seedcmd_parses_scopes_flags_and_continuations():
    text = """\
export TOP=1
unset GONE
NODE_IPS=('a' 'b')
X=`hostname -I|awk -F " " '{print$1}'`
for i in "${!NODE_IPS[@]}";
do
    if [[ "$X" == "a" || "$X" == "b" ]];
    then
        export INNER=2
        python3 -m pkg.mod \\
        --a 1 --b=x \\
        --list 1 2 3 \\
        --bare \\
        --neg -1 --a 7 # trailing comment
        break
    fi
done
FOO=bar python -m other positional --z '{"k": true}'
"""
    cmds = parse_shell_commands(text)
    assert [c.program for c in cmds] == ["unset", "python3 -m pkg.mod", "python -m other"]
    launch = cmds[1]
    assert launch.flags == {"--a": ["1", "7"], "--b": ["x"], "--list": ["1", "2", "3"], "--bare": [], "--neg": ["-1"]}
    assert launch.repeated_flags == ["--a"]
    assert launch.env == {"TOP": "1", "INNER": "2"} and launch.local_env == {"INNER": "2"}
    assert launch.depth == 2 and launch.line == 10
    other = cmds[2]
    assert other.env == {"TOP": "1", "FOO": "bar"}  # INNER went out of scope at `fi`/`done`
    assert other.positionals == ["positional"] and other.flags == {"--z": ['{"k": true}']}
    assert find_commands(cmds, "pkg.mod") == [launch]


def test_every_fixture_has_a_deployment_and_back():
    assert len(FIXTURE_FILES) == 9
    assert {p.stem for p in FIXTURE_FILES} == {p.stem for p in DEPLOYMENT_FILES}


# ---------------------------------------------------------------------------- per deployment


@pytest.mark.parametrize("path", DEPLOYMENT_FILES, ids=lambda p: p.stem)
def test_deployment_schema_and_placeholders(path: Path):
    dep = load(path)
    assert set(dep) == DEPLOYMENT_KEYS
    assert dep["id"] == path.stem
    assert dep["platform"] == "ascend-a3" and dep["model"] == "kimi-k2.6-w4a8"
    assert dep["mode"] in ("pd-mixed", "pd-disaggregation")
    assert dep["title"] in dep["source"] and ASCEND_BEST_PRACTICE_URL in dep["source"]
    names = [r["name"] for r in dep["roles"]]
    if dep["mode"] == "pd-mixed":
        assert names == ["mixed"] and dep["router"] is None
    else:
        assert names == ["prefill", "decode"] and set(dep["router"]) == ROUTER_KEYS
    for role in dep["roles"]:
        assert set(role) == ROLE_KEYS
        assert isinstance(role["nodes"], int) and role["nodes"] >= 1
        assert all(isinstance(v, str) for v in role["env"].values()), "role env values must be strings"
        assert all(flag.startswith("--") for flag in role["args"])
    assert all(isinstance(v, str) for v in dep["env"].values()), "env values must be strings"
    assert set(dep["targets"]) == {"tpot_ms", "ttft_ms"}
    for s in strings_in(dep):
        for name in re.findall(r"\{([A-Za-z_]+)\}", s):
            assert name in PLACEHOLDERS, f"unknown placeholder {{{name}}} in {s!r}"
        assert "$" not in s and not re.search(r"<[^>]*>", s), f"seed placeholder left in {s!r}"


@pytest.mark.parametrize("path", DEPLOYMENT_FILES, ids=lambda p: p.stem)
def test_deployment_matches_seed_script(path: Path):
    dep = load(path)
    _raw, script, bench = split_fixture(dep["id"])
    cmds = parse_shell_commands(script)
    servers = find_commands(cmds, "sglang.launch_server")
    assert [role_name(c) for c in servers] == [r["name"] for r in dep["roles"]]
    for cmd in servers + find_commands(cmds, "launch_router"):
        assert not cmd.repeated_flags, f"line {cmd.line}: repeated flags {cmd.repeated_flags}"

    # host set-up, unsets, sourced scripts
    tuning = [c.text for c in cmds if c.program == "sysctl" or (c.program == "echo" and "| tee /sys/" in c.text)]
    assert dep["host_setup"] == tuning
    assert dep["unset_env"] == [n for c in cmds if c.program == "unset" for n in c.positionals]
    assert dep["source_scripts"] == [s for c in cmds if c.program == "source" for s in c.positionals]

    arrays = node_arrays(script)
    dies = 0
    for role, cmd in zip(dep["roles"], servers):
        assert role["entrypoint"] == cmd.program
        assert args_as_strings(role["args"]) == cmd.flags
        assert list(role["args"]) == list(cmd.flags), "args not in the seed's order"
        assert role["env"] == cmd.local_env
        assert {**dep["env"], **role["env"]} == cmd.env
        assert role["nodes"] == arrays.get(ROLE_ARRAYS[role["name"]], 1)
        if re.fullmatch(r"\d+", cmd.flag("--nnodes", "1")):
            assert role["nodes"] == int(cmd.flag("--nnodes", "1"))
        dies += int(cmd.flag("--tp-size"))
    assert dep["cards"] * 2 == dies, "A3: 2 dies per card, --tp-size = 2 x cards"

    routers = find_commands(cmds, "sglang_router.launch_router")
    if dep["router"] is None:
        assert routers == []
        serve_port = servers[0].flag("--port")
    else:
        (router,) = routers
        assert dep["router"]["entrypoint"] == router.program
        assert args_as_strings(dep["router"]["args"]) == router.flags
        assert list(dep["router"]["args"]) == list(router.flags)
        serve_port = router.flag("--port")
    assert str(dep["serve_port"]) == serve_port

    (bench_cmd,) = parse_shell_commands(bench)
    assert bench_cmd.program.endswith("sglang.bench_serving")
    assert bench_cmd.flag("--port") == serve_port


@pytest.mark.parametrize("path", DEPLOYMENT_FILES, ids=lambda p: p.stem)
def test_benchmark_scenario_matches_bench_command(path: Path, scenarios):
    dep = load(path)
    assert dep["benchmark"] in scenarios, f"scenario {dep['benchmark']} missing from ascend.yaml"
    sc = scenarios[dep["benchmark"]]
    assert set(sc) == SCENARIO_KEYS and sc["dataset"] in DATASETS
    _raw, _script, bench = split_fixture(dep["id"])
    (cmd,) = parse_shell_commands(bench)
    assert not cmd.repeated_flags and not cmd.positionals
    flags = dict(cmd.flags)
    for field_name, flag in SCENARIO_FLAGS.items():
        want = flags.pop(flag, None)
        got = sc[field_name]
        if want is None:
            assert got is None, f"{field_name}: seed does not pass {flag}"
        else:
            assert as_strings(got) == want, f"{field_name} != {flag} {want}"
    for flag in RUNNER_FLAGS:
        flags.pop(flag, None)
    assert args_as_strings(sc["extra_args"]) == flags


@pytest.mark.parametrize("path", DEPLOYMENT_FILES, ids=lambda p: p.stem)
def test_targets_row_matches_deployment(path: Path, targets):
    dep = load(path)
    row = targets[dep["id"]]
    assert (row["cards"], row["mode"], row["dataset_label"]) == (dep["cards"], dep["mode"], dep["dataset_label"])
    assert {"tpot_ms": row["tpot_ms"], "ttft_ms": row["ttft_ms"]} == dep["targets"]
    assert row["quantization"] == "W4A8 INT8"
    assert row["category"] in ("low-latency", "high-throughput")
    # the heading ends with the TPOT target, e.g. "... 100ms"
    assert dep["title"].endswith(f" {dep['targets']['tpot_ms']}ms")


def test_every_scenario_and_target_row_is_used(scenarios, targets):
    deps = [load(p) for p in DEPLOYMENT_FILES]
    assert {d["benchmark"] for d in deps} == set(scenarios)
    assert {d["id"] for d in deps} == set(targets)


# ---------------------------------------------------------------------------- fixtures vs the seed


@pytest.mark.skipif(not SEED.exists() and not SEED_REQUIRED, reason="seed document not available here")
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_fixture_is_verbatim_from_seed(path: Path):
    seed = SEED.read_text()
    dep = load(DEPLOYMENTS / f"{path.stem}.yaml")
    script, bench = path.read_text().split(BENCH_MARKER)
    section = seed[seed.index("\n" + dep["title"] + "\n") :]
    nxt = re.search(r"\nKimi-K2\.6 W4A8 .*\n", section[1:])
    section = section[: nxt.start() + 1] if nxt else section
    assert script.strip("\n") in section
    assert bench.strip("\n") in section
