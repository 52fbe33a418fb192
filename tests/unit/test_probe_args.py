"""Probe arguments: the GPU field lists the probe is sent by default."""

from __future__ import annotations

from collectors.parsers.nvidia_smi import FALLBACK_FIELDS, QUERY_FIELDS
from collectors.probe import ProbeArgs, build_argv, probe_args


def _word(argv: list[str], key: str) -> str:
    return next(a.partition("=")[2] for a in argv if a.startswith(f"{key}="))


def test_default_gpu_fields_are_the_parsers_lists() -> None:
    # The parser reads the columns the probe asked for: both lists come from one place.
    for argv in (build_argv(ProbeArgs()), probe_args()):
        assert _word(argv, "gpu_fields") == ",".join(QUERY_FIELDS)
        assert _word(argv, "gpu_fallback") == ",".join(FALLBACK_FIELDS)
    assert QUERY_FIELDS != FALLBACK_FIELDS
