"""What a prediction takes as given, said beside it: where a speculative accept length came from
(given, or assumed and why), and that a lone PD-role plan is predicted as a unified server."""

from __future__ import annotations

from ._deps import LaunchPlan

ASSUMED_ACCEPT = (
    "ASSUMED (the SGLang cookbook's Kimi-K3 page and PR 37878 publish no accept length; the one "
    "published DSPARK figure, 7.25-7.29 of 8 on 8x MI355X, "
    "params/references/speed-bunya-k3-mi355x.yaml, is one run of bench_serving's synthetic random "
    "dataset, near the 8-token ceiling, not taken as typical; pass --predict accept=...)"
)
"""Why predict.DEFAULT_ACCEPT_LENGTH is an assumption, printed beside every prediction that uses it."""

ROLE_ALONE = {
    "prefill": (
        "PD role prefill predicted ALONE, as a unified server on this role's flags: the predictor models "
        "PD roles only as a pair (--deployment); a prefill role never decodes, so only its TTFT speaks for "
        "the role, and its TPOT and throughput are what these flags would give serving whole requests"
    ),
    "decode": (
        "PD role decode predicted ALONE, as a unified server on this role's flags: the predictor models "
        "PD roles only as a pair (--deployment); the prefill role's queue and the KV transfer are left out "
        "(TTFT is this server prefilling itself), and TPOT keeps prefill stalls a decode role does not have"
    ),
}
"""What a lone --pd-role prefill|decode plan's prediction is, said plainly (no pairing is modelled)."""


def accept_basis(from_scenario: float | None, from_stack: float | None, used: float, draft_tokens: int) -> str:
    """Where the accept length `used` came from: --predict accept=, the stack's, or ASSUMED_ACCEPT."""
    if from_scenario:
        basis = "given (--predict accept=)"
    elif from_stack:
        basis = "given (the stack's accept_length)"
    else:
        basis = ASSUMED_ACCEPT
    if used < (from_scenario or from_stack or 0.0):
        basis += f"; capped at the {draft_tokens} tokens one verify step checks"
    return basis


def role_note(plan: LaunchPlan) -> str:
    """ROLE_ALONE for a --pd-role prefill|decode plan outside a deployment; "" otherwise."""
    return ROLE_ALONE.get(plan.config.pd_role or "", "") if plan.deployment is None else ""
