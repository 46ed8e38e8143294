"""SGLang emulator: a CPU test double that speaks SGLang's HTTP API as Kimi-K2.6 would.

Used by CI and rehearsals in place of a real 1T-parameter deployment; everything it
serves is labelled emulated (``X-Emulated`` header, ``emulated: true`` in /server_info).
"""

from .app import create_app
from .latency import DEFAULT_PROFILE, LatencyProfile, profile_from_references
from .settings import EmulatorSettings, FaultSpec, parse_fault

__all__ = [
    "create_app",
    "EmulatorSettings",
    "LatencyProfile",
    "DEFAULT_PROFILE",
    "profile_from_references",
    "FaultSpec",
    "parse_fault",
]
