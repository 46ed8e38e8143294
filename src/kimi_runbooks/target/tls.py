"""One verifying TLS context for the HTTP clients the project opens.

httpx builds a new SSLContext for every client and loads the whole CA bundle into it: about 60 ms
of CPU per client on this 2-core machine, paid by every readiness probe, metrics sampler and, in the
emulator, every decode-side KV handshake (where it blocked the event loop). A context can serve any
number of clients and threads, so it is built once, with httpx's own defaults (certifi's bundle,
or SSL_CERT_FILE / SSL_CERT_DIR when set): verification is unchanged.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def verified_tls() -> ssl.SSLContext:
    """The shared context; pass it as `verify=` to httpx.Client / httpx.AsyncClient."""
    return httpx.create_ssl_context()
