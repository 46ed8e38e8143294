"""environment.yml must install exactly what pyproject.toml declares (runtime + dev extras)."""

import tomllib

import yaml
from packaging.requirements import Requirement

from kimi_runbooks.paths import REPO_ROOT

ROOT = REPO_ROOT


def _normalise(spec: str) -> tuple[str, str]:
    req = Requirement(spec)
    return req.name.lower().replace("_", "-"), str(req.specifier)


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_normalise(s) for s in project["dependencies"] + project["optional-dependencies"]["dev"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip: section"
    listed = {_normalise(s) for s in pip_sections[0] if not s.startswith("-e")}
    assert listed == declared, {
        "missing from environment.yml": sorted(declared - listed),
        "not in pyproject.toml": sorted(listed - declared),
    }
    assert "python=3.11" in env["dependencies"]
