"""Software versions across hosts (issue 15): part of the firmware/driver mismatch rule.

One cause, one finding: hosts that run different software behave differently on one
fabric, whether the difference is NIC firmware or the stack above it, so these findings
carry the ``firmware_mismatch`` rule name (:func:`fabtop.core.rules.config.firmware_mismatch`
calls :func:`software_mismatch`). Which fields must match, how exactly, and why:

======================  ==============  ===========================================
field                   compared        why
======================  ==============  ===========================================
kernel (uname -r)       major.minor     the kernel's RDMA core and in-tree drivers
                                        (ib_core, mlx5_ib, rxe) change between minor
                                        releases; patch levels and distribution
                                        builds of one major.minor differ harmlessly
rdma-core (package)     exact version   the userspace half of the verbs ABI
                                        (libibverbs and providers such as libmlx5,
                                        paired with the kernel's uverbs): the guide's
                                        first pitfall; a distribution's build number
                                        is a different set of backported fixes
MLNX_OFED / DOCA-OFED   exact release   one release ships kernel modules and userspace
                                        together: every host runs the same pair
NVIDIA driver           major.minor     a release (535.104) fixes the CUDA driver and
                                        its GPUDirect RDMA (nvidia-peermem); the third
                                        number is a respin of the same release
NCCL (loaded)           exact version   every rank of a job must load the same NCCL:
                                        its protocol between ranks is not kept
                                        compatible across releases
NIC driver/firmware     as before       :func:`~fabtop.core.rules.config.firmware_mismatch`
======================  ==============  ===========================================

A version a host could not read (tool missing, timed out, package not installed, no
process with NCCL loaded) never counts as a mismatch: it is named unknown in the
evidence of a finding, and shown unknown on the host's screen, never as agreeing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from collectors.parsers.versions import major_minor
from collectors.samples import SoftwareVersions, VersionRead
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext

RULE = "firmware_mismatch"
_NAMED = 4  # hosts named in a summary before "and N more"


def _exact(v: str) -> str | None:
    return v


@dataclass(frozen=True, slots=True)
class VersionField:
    """One software field the hosts of a fabric must agree on."""

    attr: str  # SoftwareVersions attribute
    name: str  # as people name it
    compared: str  # how: "exact version", "major.minor"
    key: Callable[[str], str | None]  # the part that must match
    why: str  # the reason, for the next step
    check: str  # the command that shows it on a host


FIELDS: tuple[VersionField, ...] = (
    VersionField(
        "kernel",
        "kernel",
        "major.minor",
        major_minor,
        "its RDMA core and in-tree drivers change between minor releases",
        "uname -r",
    ),
    VersionField(
        "rdma_core",
        "rdma-core",
        "exact version",
        _exact,
        "it is the userspace half of the verbs ABI (libibverbs, libmlx5)",
        "dpkg-query -W rdma-core (or rpm -q rdma-core)",
    ),
    VersionField(
        "ofed",
        "MLNX_OFED/DOCA-OFED",
        "exact release",
        _exact,
        "one release ships the kernel modules and userspace as a pair",
        "ofed_info -s",
    ),
    VersionField(
        "nvidia_driver",
        "NVIDIA driver",
        "major.minor",
        major_minor,
        "a release fixes the CUDA driver and GPUDirect RDMA (nvidia-peermem)",
        "cat /proc/driver/nvidia/version",
    ),
    VersionField(
        "nccl",
        "NCCL (loaded)",
        "exact version",
        _exact,
        "every rank of a job must load the same NCCL",
        "NCCL_DEBUG=VERSION in the serving process's environment",
    ),
)


# Each field's track: one finding per field, under the fabric.
_KEYS = {f.attr: (RULE, f"fabric/software/{f.attr}") for f in FIELDS}


def _shown(hosts: list[str], values: dict[str, str]) -> str:
    shown = ", ".join(f"{h} ({values[h]})" for h in hosts[:_NAMED])
    return shown + (f" and {len(hosts) - _NAMED} more" if len(hosts) > _NAMED else "")


def _grouped(values: dict[str, str]) -> str:
    by: dict[str, list[str]] = {}
    for host, v in sorted(values.items()):
        by.setdefault(v, []).append(host)
    return "; ".join(f"{v}: {', '.join(hs)}" for v, hs in by.items())


def _finding(
    f: VersionField, keys: dict[str, str], full: dict[str, str], unknown: dict[str, str]
) -> Finding | None:
    counts = Counter(keys.values()).most_common()
    if len(counts) < 2:
        return None
    if counts[0][1] == counts[1][1]:  # no majority: every host is named
        majority = None
        odd = sorted(keys)
        said = f"no majority: {_shown(odd, full)}"
    else:
        majority = counts[0][0]
        odd = sorted(h for h, k in keys.items() if k != majority)
        said = f"most run {majority}, but {_shown(odd, full)}"
    evidence: dict[str, str | None] = {
        "values": _grouped(full),
        "compared": f.compared,
        "majority": majority,
    }
    if unknown:
        evidence["unknown"] = "; ".join(f"{h} ({why})" for h, why in sorted(unknown.items()))
    return Finding(
        rule=RULE,
        severity="warning",
        subject="fabric",
        summary=f"{f.name} differs across hosts ({f.compared}): {said}",
        evidence=dict(evidence),
        next_step=f"on {odd[0]}: {f.check}; run one {f.name} on every host: {f.why}",
    )


def software_mismatch(ctx: RuleContext) -> list[Finding]:
    """Different kernel, rdma-core, OFED, NVIDIA driver or loaded NCCL across hosts."""
    names: list[str] = []
    vers: list[SoftwareVersions] = []
    for hs in ctx.state.hosts.values():
        s = hs.sample
        if s is not None and s.versions is not None:
            names.append(hs.name)
            vers.append(s.versions)
    out: list[Finding] = []
    for f in FIELDS:
        reads = [getattr(v, f.attr) for v in vers]
        found = None
        # The usual fabric runs one version of each: one value (or none) is no mismatch,
        # whatever the key, and nothing more is worked out (this runs every tick).
        if len({r.value for r in reads if r is not None}) > 1:
            found = _compare(f, names, reads)
        ctx.report(out, found, _KEYS[f.attr], ctx.now)
    return out


def _compare(f: VersionField, names: list[str], reads: list[VersionRead | None]) -> Finding | None:
    keys: dict[str, str] = {}
    full: dict[str, str] = {}
    unknown: dict[str, str] = {}
    key_of: dict[str, str | None] = {}  # each distinct value's key, worked out once
    for name, got in zip(names, reads, strict=True):
        if got is None:
            continue  # not read at all (gpu=off, an older recording): nothing to say
        value = got.value
        key = None
        if value is not None:
            key = key_of[value] if value in key_of else key_of.setdefault(value, f.key(value))
        if key is None or value is None:
            unknown[name] = got.note or "unknown"
            continue
        keys[name] = key
        full[name] = value
    return _finding(f, keys, full, unknown)
