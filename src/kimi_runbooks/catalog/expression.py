"""The small language of params/rules `violation:` expressions, and the facts it may name.

An expression is Python-like (arithmetic, comparisons, `and/or/not`, `in`, str.startswith) over
named facts. It is parsed with `ast` and walked by a whitelist, so params files state rules
without any code being executed from them. `expression_problems` checks an expression without
facts (what `validate-params` and the catalog loader run), `evaluate` computes it on a plan's.
"""

from __future__ import annotations

import ast
import operator
import string
from collections.abc import Callable, Collection
from typing import Any

FACT_NAMES = frozenset(
    {
        "platform",
        "platform_name",
        "vendor",
        "arch",
        "fp8",
        "fp4_formats",
        "devices",
        "devices_per_node",
        "idle_devices",
        "needed_per_node",
        "device_ids_count",
        "max_device_id",
        "nnodes",
        "memory_gib",
        "runtime_reserve_gib",
        "model",
        "model_vendors",
        "weight_format",
        "weight_only_runner",
        "num_attention_heads",
        "heads_per_rank",
        "aiter_tps",
        "aiter_padded_tps",
        "decode_attention_backend",
        "decode_attention_backend_shown",
        "image_release_note",
        "max_context_length",
        "has_draft_model",
        "published",
        "published_models",
        "tp",
        "dp",
        "ep",
        "pp",
        "tp_pp",
        "dp_replicas",
        "needed_devices",
        "enable_dp_attention",
        "kv_cache_dtype",
        "mem_fraction_static",
        "context_length",
        "speculative",
        "speculative_algorithm",
        "host",
        "api_key_env",
        "sglang_version",
        "docker_image",
        "image_version",
        "weights_gib_per_device",
        "usable_gib_per_device",
        "kv_budget_gib",
        "kv_pool_tokens",
        "hybrid",
        "state_pool_requests",
        "state_pool_slots",
        "state_slots_per_request",
        "state_pool_caps_batch",
        "max_running_requests",
        "has_cookbook",
        "cookbook_status",
        "cookbook_cell",
        "cookbook_explanation",
        "cookbook_verified_cells",
        "cookbook_source",
        "strategy",
    }
)
"""Every fact the planner gives the rules (server_rules.rule_facts builds exactly these; a test checks)."""

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


def _parse(expression: str) -> ast.expr:
    try:
        return ast.parse(expression, mode="eval").body
    except SyntaxError as exc:
        raise RuleExpressionError(f"cannot parse '{expression}': {exc.msg}") from None


def evaluate(expression: str, facts: dict[str, Any]) -> Any:
    return _eval(_parse(expression), facts, expression)


def expression_problems(expression: str, names: Collection[str] = FACT_NAMES) -> list[str]:
    """What is wrong with `expression` before any plan exists: syntax, constructs outside the
    whitelist, facts the planner does not provide. Empty when it is fine."""
    try:
        body = _parse(expression)
    except RuleExpressionError as exc:
        return [str(exc)]
    problems: list[str] = []
    _check(body, names, expression, problems)
    return problems


def template_problems(text: str, names: Collection[str] = FACT_NAMES) -> list[str]:
    """`{fact}` placeholders of a rule's message/fix/source that name no fact."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return [f"cannot read placeholders of '{text}': {exc}"]
    return [f"unknown fact '{{{f}}}' in '{text}'" for f in fields if f.split(".")[0].split("[")[0] not in names]


def _check(node: ast.AST, names: Collection[str], src: str, problems: list[str]) -> None:
    children: list[ast.AST]
    if isinstance(node, ast.Constant):
        return
    if isinstance(node, ast.Name):
        if node.id not in names:
            problems.append(f"unknown fact '{node.id}' in '{src}'")
        return
    if isinstance(node, (ast.Tuple, ast.List)):
        children = list(node.elts)
    elif isinstance(node, ast.BoolOp):
        children = list(node.values)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        children = [node.operand]
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        children = [node.left, node.right]
    elif isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
        children = [node.left, *node.comparators]
    elif _is_str_method(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        children = [node.func.value, *node.args]
    else:
        problems.append(f"'{ast.unparse(node)}' is not allowed in a rule ('{src}')")
        return
    for child in children:
        _check(child, names, src, problems)


def _is_str_method(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _STR_METHODS
        and not node.keywords
    )


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
            if compare is None:
                raise RuleExpressionError(f"'{ast.unparse(node)}' is not allowed in a rule ('{src}')")
            if not compare(left, right):
                return False
            left = right
        return True
    if _is_str_method(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        target = _eval(node.func.value, facts, src)
        args = [_eval(a, facts, src) for a in node.args]
        if not isinstance(target, str):
            return False
        return getattr(target, node.func.attr)(*args)
    raise RuleExpressionError(f"'{ast.unparse(node)}' is not allowed in a rule ('{src}')")
