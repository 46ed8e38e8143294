"""The one address rule (target.address), issue 40 item 3: a value that looks numeric must be a
real IP address; host names stay allowed. Each entry point has its own test with the same table
(tests/plan/test_bad_input.py, tests/runbook/test_runbook_params.py, tests/target/test_health.py)."""

from __future__ import annotations

import pytest

from kimi_runbooks.target.address import address_problem, check_address
from tests.support.addresses import ADDRESSES, IPV4_RULE, NUMERIC_NON_ADDRESSES


@pytest.mark.parametrize("value", NUMERIC_NON_ADDRESSES)
def test_a_numeric_value_that_is_no_ipv4_address_is_refused_with_the_rule_and_the_fix(value: str) -> None:
    problem = address_problem(value, "host")
    assert problem is not None and problem.startswith(f"host {IPV4_RULE}")
    assert "Fix: pass e.g. 127.0.0.1" in problem and value not in problem


@pytest.mark.parametrize("value", ADDRESSES)
def test_ip_addresses_and_host_names_pass(value: str) -> None:
    assert check_address(value, "host") == value


@pytest.mark.parametrize("value", ["a..b", "-node", "1.2.3.4:80", "[::1]", "node 1", ""])
def test_other_malformed_values_name_the_grammar(value: str) -> None:
    with pytest.raises(ValueError, match=r"host must be an IP address or a host name.*Fix: pass e\.g\."):
        check_address(value, "host")
