"""Load and validate everything under params/: the single source of truth for hardware,
checkpoints, rules, published deployments, scenarios and references. Each kind's pydantic model
lives in params_models (scenarios in scenario_models), so a typo in a params file fails at load
time with the file name and the field; this module reads the folder and checks the
cross-references."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from ..paths import PARAMS_DIR
from .params_models import (
    Deployment,
    Model,
    ParamsError,
    Platform,
    Reference,
    Rule,
    RuleFile,
)
from .scenario_models import Scenario, ScenarioSet

ANY_PLATFORM = "any"
"""The platform of an accuracy reference a model's vendor published on its own endpoint (Kimi Vendor
Verifier results): it holds for the model on any hardware that serves it correctly."""
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: params/ loads 25x faster


# --------------------------------------------------------------------------- catalog


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True)

    root: Path
    platforms: dict[str, Platform]
    models: dict[str, Model]
    rules: list[Rule]
    deployments: dict[str, Deployment]
    scenarios: dict[str, Scenario]
    scenario_sets: dict[str, ScenarioSet]
    references: dict[str, Reference]

    def platform(self, platform_id: str) -> Platform:
        return _lookup(self.platforms, platform_id, "platform")

    def model(self, model_id: str) -> Model:
        return _lookup(self.models, model_id, "model")

    def deployment(self, deployment_id: str) -> Deployment:
        return _lookup(self.deployments, deployment_id, "deployment")

    def scenario(self, scenario_id: str) -> Scenario:
        return _lookup(self.scenarios, scenario_id, "scenario")

    def references_for(self, platform_id: str, kind: str | None = None) -> list[Reference]:
        return [r for r in self.references.values() if r.platform == platform_id and (kind is None or r.kind == kind)]


class UnknownIdError(ParamsError):
    """An id that params/ does not define; the message lists the valid ones."""


T = TypeVar("T")


def _lookup(table: dict[str, T], key: str, what: str) -> T:
    try:
        return table[key]
    except KeyError:
        valid = ", ".join(sorted(table)) or "(none)"
        raise UnknownIdError(
            f"unknown {what} '{key}'. Valid {what} ids: {valid}. "
            f"Fix: pick one of those, or add params/{what}s/{key}.yaml."
        ) from None


def default_params_dir() -> Path:
    """params/ next to the source tree, or $KIMI_RUNBOOKS_PARAMS when set."""
    override = os.environ.get("KIMI_RUNBOOKS_PARAMS")
    if override:
        return Path(override)
    return PARAMS_DIR


def _read_yaml(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return yaml.load(fh, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from None


def _parse(model: type[BaseModel], path: Path) -> Any:
    data = _read_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ParamsError(f"{path}: {problems}") from None


def _load_dir(folder: Path, model: type[BaseModel]) -> list[Any]:
    if not folder.is_dir():
        return []
    return [_parse(model, path) for path in sorted(folder.glob("*.yaml"))]


def _index(items: list[Any], folder: Path) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for item in items:
        if item.id in table:
            raise ParamsError(f"{folder}: id '{item.id}' is defined twice")
        table[item.id] = item
    return table


@lru_cache(maxsize=8)
def _load_catalog_cached(root: Path) -> Catalog:
    if not root.is_dir():
        raise ParamsError(f"params folder {root} does not exist. Fix: set KIMI_RUNBOOKS_PARAMS.")
    platforms = _index(_load_dir(root / "platforms", Platform), root / "platforms")
    models = _index(_load_dir(root / "models", Model), root / "models")
    rules: list[Rule] = []
    for rule_file in _load_dir(root / "rules", RuleFile):
        rules.extend(rule_file.rules)
    _index(rules, root / "rules")
    deployments = _index(_load_dir(root / "deployments", Deployment), root / "deployments")
    scenario_sets = {s.set: s for s in _load_dir(root / "scenarios", ScenarioSet)}
    scenarios = _index([sc for s in scenario_sets.values() for sc in s.scenarios], root / "scenarios")
    references = _index(_load_dir(root / "references", Reference), root / "references")
    from ..cookbook.kept import attach_cookbooks  # the cookbook package imports the catalog's models

    models = attach_cookbooks(root, models, set(platforms))
    catalog = Catalog(
        root=root,
        platforms=platforms,
        models=models,
        rules=rules,
        deployments=deployments,
        scenarios=scenarios,
        scenario_sets=scenario_sets,
        references=references,
    )
    _check_cross_references(catalog)
    return catalog


def _check_cross_references(catalog: Catalog) -> None:
    """Every id a params file names exists: (who names it, what kind, the id) checked in one place."""
    known: dict[str, Mapping[str, Any]] = {
        "platform": catalog.platforms,
        "model": catalog.models,
        "deployment": catalog.deployments,
        "scenario": catalog.scenarios,
    }
    named: list[tuple[str, str, str | None]] = []
    for platform in catalog.platforms.values():
        who = f"platform {platform.id}"
        named += [(who, "model", m) for m in [platform.recipe.model, *platform.published_models]]
        named.append((who, "deployment", platform.recipe.deployment))
    for model in catalog.models.values():
        book = model.cookbook
        hardware = [c.hardware for c in book.cells] + list(book.pending) if book else []
        named += [(f"model {model.id} (cookbook)", "platform", where) for where in hardware]
    for dep in catalog.deployments.values():
        who = f"deployment {dep.id}"
        named += [(who, "platform", dep.platform), (who, "model", dep.model), (who, "scenario", dep.benchmark)]
    for ref in catalog.references.values():
        # An accuracy figure a model's vendor published on its own endpoint names no hardware platform.
        vendor_endpoint = ref.kind == "accuracy" and ref.platform == ANY_PLATFORM
        if not vendor_endpoint:
            named.append((f"reference {ref.id}", "platform", ref.platform))
        named.append((f"reference {ref.id}", "model", ref.model))
    problems = [f"{who}: unknown {kind} '{name}'" for who, kind, name in named if name and name not in known[kind]]
    if problems:
        raise ParamsError("params cross-reference errors: " + "; ".join(problems))


def load_catalog(root: Path | str | None = None) -> Catalog:
    """The validated catalog of params/ (cached per folder)."""
    return _load_catalog_cached(Path(root) if root else default_params_dir())
