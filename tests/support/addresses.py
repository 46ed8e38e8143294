"""The address table every entry point is tested with (plan flags, runbook parameters, base_url)."""

NUMERIC_NON_ADDRESSES = (
    "999.1.1.1",
    "256.256.256.256",
    "1.2.3",
    "1.2.3.4.5",
    "127.1",
    "010.0.0.1",
    "0x7f.0.0.1",
    "12345",
    "node0.123",
)
"""Values a resolver reads as IPv4 (the last label is a number) that are no IPv4 address: each
planned VALID before issue 40 (`docker run -p 999.1.1.1:30000:30000`)."""

ADDRESSES = ("10.0.0.1", "0.0.0.0", "::1", "fe80::1", "node1", "node0.cluster.local", "3com.example", "sglang_server")
"""Addresses every entry point still takes: IPv4, IPv6, host names (digits first, underscores too)."""

IPV4_RULE = "looks like an IPv4 address but is not one"
