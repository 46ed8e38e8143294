"""What a plan's addresses, interface names and image references may look like.

Every value is quoted when a command is printed, so a hostile one would not run; but a plan that
prints `--host '0.0.0.0; rm -rf /'` is still VALID nonsense, and its fix texts would echo it. So
each input is checked against its grammar, and an error names the field, the rule and an example,
never the value itself (it may hold anything).

Grammars: a host is checked by `target.address` (the one address rule, shared with base_url); an
interface name is what Linux accepts (IFNAMSIZ 16 including the NUL, no '/' or whitespace); an
image reference follows the distribution/reference grammar (github.com/distribution/reference,
regexp.go: [domain[:port]/]path[:tag][@digest]).
"""

from __future__ import annotations

import re

from ..target.address import HOST_CHARS as _HOST_CHARS
from ..target.address import odd_characters as _odd_characters

_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REFERENCE = re.compile(rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?$")
IMAGE_SOURCE = "distribution/reference regexp.go (github.com/distribution/reference)"


def check_ifname(value: str, field: str = "ifname") -> str:
    if not _IFNAME.match(value):
        raise ValueError(
            f"{field} must be a network interface name of at most 15 letters, digits or '_.:@-' "
            f"(Linux IFNAMSIZ){_odd_characters(value, _HOST_CHARS + '_@')}. Fix: pass e.g. eth0 or ib0 "
            "(ip -brief link lists them)"
        )
    return value


def _names_a_registry(component: str) -> bool:
    """distribution/reference's rule: a first component is a registry only with a '.' or ':', or as localhost."""
    return "." in component or ":" in component or component == "localhost"


def check_image(value: str, field: str = "docker_image") -> str:
    first, slash, _ = value.partition("/")
    upper_name = (not slash or not _names_a_registry(first)) and first != first.lower()
    if not IMAGE_REFERENCE.match(value) or len(value) > 512 or upper_name:
        raise ValueError(
            f"{field} is not a docker image reference ([registry[:port]/]name[:tag][@digest], lower-case name; "
            f"{IMAGE_SOURCE}){_odd_characters(value, _HOST_CHARS + '/_@')}. Fix: pass e.g. lmsysorg/sglang:v0.5.9"
        )
    return value


def check_port(value: int, field: str) -> int:
    if not 1 <= value <= 65535:
        raise ValueError(f"{field} must be a TCP port in 1-65535 (got {value}). Fix: pass e.g. 30000")
    return value
