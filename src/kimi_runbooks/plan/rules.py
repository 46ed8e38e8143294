"""Evaluate the data-driven launch rules of params/rules/ against a plan's facts.

A rule's `violation` is an expression over named facts (catalog/expression.py: the language, the
fact names, the static check the catalog loader runs). A rule that still fails to evaluate on a
plan becomes an error result naming the rule, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..catalog import Rule
from ..catalog.expression import RuleExpressionError, evaluate

__all__ = ["RuleExpressionError", "RuleResult", "check_rules", "evaluate", "parse_version", "rule_applies"]


def parse_version(text: str) -> Version:
    """SGLang versions, including local builds such as 0.5.6.post3.dev11412+g964c45cf3."""
    try:
        return Version(text)
    except InvalidVersion:
        match = re.match(r"v?(\d+(?:\.\d+)*)", text)
        if not match:
            raise ValueError(f"cannot read SGLang version '{text}'. Fix: pass a version such as 0.5.9") from None
        return Version(match.group(1))


@dataclass(frozen=True)
class RuleResult:
    """One rule that fired: what failed, how to fix it, where the rule comes from."""

    id: str
    severity: str
    kind: str
    message: str
    fix: str
    source: str
    allowed: bool = False
    role: str | None = None

    def __str__(self) -> str:
        where = f" [{self.role}]" if self.role else ""
        tag = " (allowed with --allow)" if self.allowed else ""
        return f"{self.id}{where}: {self.message}. Fix: {self.fix}. Source: {self.source}{tag}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def rule_applies(rule: Rule, facts: dict[str, Any]) -> bool:
    scope = rule.applies
    if scope.vendors and facts["vendor"] not in scope.vendors:
        return False
    if scope.archs and facts["arch"] not in scope.archs:
        return False
    if scope.platforms and facts["platform"] not in scope.platforms:
        return False
    if scope.models and facts["model"] not in scope.models:
        return False
    if scope.sglang:
        try:
            spec = SpecifierSet(scope.sglang)
        except InvalidSpecifier:
            raise RuleExpressionError(f"rule {rule.id}: bad version range '{scope.sglang}'") from None
        # pre-releases count: 0.5.10rc0 is a version SGLang shipped images of (AMD's EAGLE3 blog)
        if not spec.contains(parse_version(facts["sglang_version"]), prereleases=True):
            return False
    return True


class _Facts(dict[str, Any]):
    """format_map helper: unknown placeholders stay visible instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def check_rules(
    rules: list[Rule],
    facts: dict[str, Any],
    allow: set[str] | frozenset[str] = frozenset(),
    role: str | None = None,
) -> list[RuleResult]:
    """Every rule that fires, errors first; allowed errors become warnings marked as such."""
    fired: list[RuleResult] = []
    shown = _Facts({k: _show(v) for k, v in facts.items()})
    for rule in rules:
        try:
            if not rule_applies(rule, facts) or not evaluate(rule.violation, facts):
                continue
            allowed = rule.severity == "error" and rule.id in allow
            result = RuleResult(
                id=rule.id,
                severity="warning" if allowed else rule.severity,
                kind=rule.kind,
                message=rule.message.format_map(shown),
                fix=rule.fix.format_map(shown),
                source=rule.source.format_map(shown),
                allowed=allowed,
                role=role,
            )
        except (RuleExpressionError, TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
            result = _broken(rule, exc, role)
        fired.append(result)
    fired.sort(key=lambda r: r.severity != "error")
    return fired


def _broken(rule: Rule, exc: Exception, role: str | None) -> RuleResult:
    return RuleResult(
        id="rule-cannot-be-evaluated",
        severity="error",
        kind="rule",
        message=f"rule {rule.id} cannot be evaluated on this plan ({type(exc).__name__}: {exc})",
        fix=f"correct rule {rule.id} in params/rules, then run `kimi-runbooks validate-params`",
        source="params/rules",
        role=role,
    )


def _show(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "none"
    return value


@dataclass(frozen=True)
class VersionChange:
    """A rule whose SGLang version range makes it apply differently than at the default version."""

    rule_id: str
    sglang: str
    default_version: str
    applies_at_default: bool
    applies_now: bool
    fires_at_default: bool
    fires_now: bool

    def __str__(self) -> str:
        def state(applies: bool, fires: bool) -> str:
            return ("applies, fires" if fires else "applies, passes") if applies else "does not apply"

        return (
            f"{self.rule_id} (SGLang {self.sglang}): at {self.default_version} "
            f"{state(self.applies_at_default, self.fires_at_default)}; now {state(self.applies_now, self.fires_now)}"
        )
