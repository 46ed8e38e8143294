"""What a server address may look like: the one rule for every place an address enters.

A plan's `--host`, `--node-ip`, `--prefill-ip`, `--decode-ip`, the same runbook parameters, and the
host of a base_url all pass `address_problem`, so the plan, the runbook and the deploy stage agree.

An address is an IP literal (Python's ipaddress) or a host name of DNS labels (letters, digits,
inner hyphens; underscores too, as docker and compose service names use them). A name whose last
label is a number (all digits, or 0x and hex digits) is read as IPv4 by browsers and resolvers
(WHATWG URL, "ends in a number"), so it must then be a real dotted-quad: four decimal numbers
0-255 without leading zeros. `999.1.1.1`, `256.256.256.256`, `1.2.3` and `127.1` are refused,
not taken as host names. An error names the field, the rule and an example, never the value
itself (it may hold anything).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
_NUMBER = re.compile(r"^(?:[0-9]+|0[xX][0-9A-Fa-f]*)$")
HOST_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:_"
"""The characters an address may hold (named when a value holds others)."""


def odd_characters(value: str, allowed: str) -> str:
    """The characters of ``value`` outside ``allowed``, named (never the value itself)."""
    odd = sorted({c for c in value if c not in allowed})
    names = {" ": "space", "\t": "tab", "\n": "newline", "'": "quote", '"': "double quote"}
    shown = ", ".join(names.get(c, repr(c) if c.isprintable() else f"U+{ord(c):04X}") for c in odd[:6])
    return f" (it contains {shown})" if odd else ""


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def looks_numeric(value: str) -> bool:
    """Whether a resolver would read the value as an IPv4 address: its last label is a number."""
    name = value[:-1] if value.endswith(".") else value
    return bool(_NUMBER.match(name.rsplit(".", 1)[-1]))


def address_problem(
    value: str, field: str, example: str = "127.0.0.1", name_example: str = "node0.cluster.local"
) -> str | None:
    """None for a usable address; else '<field> ... Fix: ...' (without the value)."""
    if _is_ip(value):
        return None
    if ":" not in value and looks_numeric(value):
        return (
            f"{field} looks like an IPv4 address but is not one: an IPv4 address is four decimal numbers "
            f"0-255 without leading zeros{odd_characters(value, HOST_CHARS)}. Fix: pass e.g. {example}, "
            f"or a host name such as {name_example}"
        )
    name = value[:-1] if value.endswith(".") else value
    if 0 < len(name) <= 253 and all(_LABEL.match(label) for label in name.split(".")):
        return None
    return (
        f"{field} must be an IP address or a host name{odd_characters(value, HOST_CHARS)}. "
        f"Fix: pass e.g. {example} or {name_example}"
    )


def check_address(value: str, field: str, example: str = "127.0.0.1") -> str:
    """The value when it is an address; ValueError with the field, the rule and the fix otherwise."""
    problem = address_problem(value, field, example)
    if problem:
        raise ValueError(problem)
    return value


def url_host_problem(url: str) -> str | None:
    """The rule applied to the host of a base_url (its IDNA form when the name is not ASCII); None
    when the URL has no host to judge (the URL checks say what is wrong with it)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        pass  # not a name IDNA can spell: the rule below names what is wrong
    return address_problem(host, "the host of base_url", "http://127.0.0.1:30000", "http://node0.cluster.local:30000")
