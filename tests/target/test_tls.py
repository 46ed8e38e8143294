"""The shared TLS context: built once, and still verifying (httpx's defaults, not a relaxed copy)."""

from __future__ import annotations

import ssl

from kimi_runbooks.target.tls import verified_tls


def test_one_context_that_verifies_certificates_and_host_names():
    ctx = verified_tls()
    assert verified_tls() is ctx
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # a CA bundle is loaded
