"""Evaluate the data-driven launch rules of params/rules/ against a plan's facts.

A rule's `violation` is a small Python-like expression (arithmetic, comparisons, `and/or/not`,
`in`, str.startswith) over named facts. It is parsed with `ast` and walked by a whitelist, so
params files can state rules without any code being executed from them.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .catalog import Rule

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_STR_METHODS = {"startswith", "endswith"}


class RuleExpressionError(ValueError):
    """A rule's expression uses something the evaluator does not allow, or an unknown fact."""


def evaluate(expression: str, facts: dict[str, Any]) -> Any:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise RuleExpressionError(f"cannot parse '{expression}': {exc.msg}") from None
    return _eval(tree.body, facts, expression)


def _eval(node: ast.AST, facts: dict[str, Any], src: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in facts:
            raise RuleExpressionError(f"unknown fact '{node.id}' in '{src}'")
        return facts[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, facts, src) for e in node.elts)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_eval(v, facts, src) for v in node.values)
        return any(_eval(v, facts, src) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        value = _eval(node.operand, facts, src)
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left, facts, src), _eval(node.right, facts, src)
        try:
            return _BINOPS[type(node.op)](left, right)
        except ZeroDivisionError:
            return float("nan")
    if isinstance(node, ast.Compare):
        left = _eval(node.left, facts, src)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, facts, src)
            compare = _CMPOPS.get(type(op))
            if compare is None or not compare(left, right):
                return False
            left = right
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _STR_METHODS
        and not node.keywords
    ):
        target = _eval(node.func.value, facts, src)
        args = [_eval(a, facts, src) for a in node.args]
        if not isinstance(target, str):
            return False
        return getattr(target, node.func.attr)(*args)
    raise RuleExpressionError(f"'{ast.unparse(node)}' is not allowed in a rule ('{src}')")


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
        return {
            "id": self.id,
            "severity": self.severity,
            "kind": self.kind,
            "message": self.message,
            "fix": self.fix,
            "source": self.source,
            "allowed": self.allowed,
            "role": self.role,
        }


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
        if parse_version(facts["sglang_version"]) not in spec:
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
    for rule in rules:
        if not rule_applies(rule, facts) or not evaluate(rule.violation, facts):
            continue
        shown = _Facts({k: _show(v) for k, v in facts.items()})
        allowed = rule.severity == "error" and rule.id in allow
        fired.append(
            RuleResult(
                id=rule.id,
                severity="warning" if allowed else rule.severity,
                kind=rule.kind,
                message=rule.message.format_map(shown),
                fix=rule.fix.format_map(shown),
                source=rule.source.format_map(shown),
                allowed=allowed,
                role=role,
            )
        )
    fired.sort(key=lambda r: r.severity != "error")
    return fired


def _show(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return value
