"""Addresses and ports on this machine: which socket family a host needs, and a free port."""

from __future__ import annotations

import socket


def socket_family(host: str) -> socket.AddressFamily:
    """AF_INET6 for a host that is only IPv6 ("::1", "[::1]"), else AF_INET (names that resolve
    to both, like localhost, keep IPv4: that is where the server binds them)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
    except OSError:
        return socket.AF_INET
    families = {info[0] for info in infos}
    return socket.AF_INET6 if families == {socket.AF_INET6} else socket.AF_INET


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now (IPv6 loopback is bound with an IPv6 socket); OSError when `host`
    cannot be bound at all."""
    host = host.strip("[]")
    with socket.socket(socket_family(host), socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port
