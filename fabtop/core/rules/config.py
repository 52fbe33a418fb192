"""Configuration rules: MTU across the fabric, RoCE MTU, firmware and software drift."""

from __future__ import annotations

import functools
import re
from collections import Counter

from fabtop.core.findings import Finding, PortRef
from fabtop.core.rules.context import LinkTick, RuleContext, is_rdma_ethernet
from fabtop.core.rules.kinds import state_rule
from fabtop.core.rules.versions import software_mismatch

# Links that carry the GPU fabric; management NICs (kind "netdev") may rightly differ.
_FABRIC_KINDS = {"roce": "RoCE", "tb": "Thunderbolt"}
# mlx5 firmware-version reads "28.39.1002 (MT_0000000838)": the PSID names the board.
# Without "(" in the class, a try from each "(" of a long run stops at the next one
# (with it, each ran to the end: the square of the run, every rules pass).
_PSID_RE = re.compile(r"\(([^()]+)\)")


def _fabric_kind(lt: LinkTick) -> str | None:
    if is_rdma_ethernet(lt.link):
        return "roce"
    return lt.link.kind if lt.link.kind in _FABRIC_KINDS else None


def _odd_ones(values: dict[str, int | str]) -> tuple[int | str, list[str]] | None:
    if len(set(values.values())) < 2:
        return None  # all agree (the usual case): no need to count them
    counts = Counter(values.values())
    if len(counts) < 2:
        return None
    majority = counts.most_common(1)[0][0]
    return majority, sorted(k for k, v in values.items() if v != majority)


def _grouped(values: dict[str, int | str]) -> str:
    by: dict[str, list[str]] = {}
    for label, v in sorted(values.items()):
        by.setdefault(str(v), []).append(label)
    return "; ".join(f"{v}: {', '.join(labels)}" for v, labels in by.items())


def _mtu_links(ctx: RuleContext) -> list[tuple[LinkTick, str, int]]:
    """(link, fabric kind, MTU) of each fabric link that reports its MTU."""
    out: list[tuple[LinkTick, str, int]] = []
    for lt in ctx.links:
        kind = _fabric_kind(lt)
        mtu = lt.link.mtu
        if kind is None or mtu is None or (not lt.link.physical and kind != "roce"):
            continue
        out.append((lt, kind, mtu))
    return out


@state_rule("mtu_mismatch")
def mtu_mismatch(ctx: RuleContext) -> list[Finding]:
    """Different netdev MTUs on the fabric links of different hosts."""
    links = _mtu_links(ctx)
    one_each = len({(kind, mtu) for _, kind, mtu in links}) == len({k for _, k, _ in links})
    if one_each and not ctx.remembers("mtu_mismatch"):
        return []  # one MTU per kind (the usual case): nothing to find, nothing to clear
    groups: dict[str, dict[str, int | str]] = {}
    ports: dict[str, PortRef] = {}
    for lt, kind, mtu in links:
        groups.setdefault(kind, {})[lt.label] = mtu
        ports[lt.label] = lt.ref
    out: list[Finding] = []
    for kind, pretty in _FABRIC_KINDS.items():
        values = groups.get(kind, {})
        odd = _odd_ones(values)
        found = None
        if odd is not None:
            majority, labels = odd
            first = ports[labels[0]]
            shown = ", ".join(f"{label} ({values[label]})" for label in labels[:4])
            found = Finding(
                rule="mtu_mismatch",
                severity="warning",
                subject="fabric",
                summary=(
                    f"MTU differs across {pretty} links: most use {majority}, but {shown}"
                    + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
                ),
                evidence={"values": _grouped(values), "majority": majority},
                next_step=(
                    f"on {first.host}: ip link show dev {first.name}; "
                    f"to align: ip link set dev {first.name} mtu {majority} "
                    "(and the switch ports), fabtop changes nothing itself"
                ),
            )
        ctx.report(out, found, ("mtu_mismatch", f"fabric/{kind}"), ctx.now)
    return out


@state_rule("roce_mtu_low")
def roce_mtu_low(ctx: RuleContext) -> list[Finding]:
    """A RoCE port whose netdev MTU is too small for RoCE MTU 4096."""
    out: list[Finding] = []
    need = ctx.th("roce_min_mtu")
    for lt in ctx.links:
        found = None
        mtu = lt.link.mtu
        if mtu is not None and mtu < need and is_rdma_ethernet(lt.link):
            found = Finding(
                rule="roce_mtu_low",
                severity="warning",
                subject=lt.subject,
                summary=(
                    f"{lt.label}: MTU {mtu} is below {need:.0f}, so RoCE runs with a path MTU "
                    "of 2048 or less instead of 4096 (more packets, lower throughput)"
                ),
                evidence={"mtu": mtu, "roce_min_mtu": need},
                next_step=(
                    f"ibv_devinfo -d {lt.link.rdma_device or '<dev>'} | grep active_mtu; "
                    f"ip link set dev {lt.name} mtu 9000 on every host and the switch ports"
                ),
                host=lt.host,
                port=lt.ref,
            )
        ctx.report(out, found, ("roce_mtu_low", lt.subject), lt.t)
    return out


def _firmware_group(lt: LinkTick) -> tuple[str, str] | None:
    """(group the firmware must agree within, version) for one link."""
    link = lt.link
    fw = link.firmware
    if not fw or not (link.physical or link.rdma_device):
        return None
    return _firmware_of(fw, link.kind, link.driver, link.rdma_device)


# Firmware, driver and device change when a NIC is flashed or swapped, not from one tick to
# the next: every port of every host asks the same few questions every pass. The bound
# keeps a fabric that reports ever new names (remote text) from growing it.
@functools.lru_cache(maxsize=512)
def _firmware_of(
    fw: str, kind: str, driver: str | None, rdma_device: str | None
) -> tuple[str, str]:
    m = _PSID_RE.search(fw)
    board = m.group(1) if m else ""
    version = _PSID_RE.sub("", fw).strip()
    mlx5 = driver == "mlx5_core" or (rdma_device or "").startswith("mlx5")
    if mlx5 and not board:
        # mlx5 firmware majors name the device family (16 ConnectX-5, 20 ConnectX-6,
        # 22 ConnectX-6 Dx, 28 ConnectX-7): different families run different firmware.
        board = "family " + version.split(".", 1)[0]
    driver = driver or ("mlx5" if mlx5 else "")
    parts = [p for p in (kind, driver, board) if p]
    return " ".join(parts), version


@state_rule("firmware_mismatch")
def firmware_mismatch(ctx: RuleContext) -> list[Finding]:
    """Different NIC firmware across hosts for the same kind of NIC, or different software
    (kernel, rdma-core, OFED, NVIDIA driver, loaded NCCL: which fields and how exactly in
    :mod:`fabtop.core.rules.versions`)."""
    groups: dict[str, dict[str, set[str]]] = {}
    first: dict[tuple[str, str], LinkTick] = {}  # the port to name in the next step
    for lt in ctx.links:
        gv = _firmware_group(lt)
        if gv is None:
            continue
        group, version = gv
        # Per host: two ports of one NIC share the firmware anyway.
        by_host = groups.get(group)
        if by_host is None:
            by_host = groups[group] = {}
        versions = by_host.get(lt.host)
        if versions is None:
            by_host[lt.host] = {version}
            first[(group, lt.host)] = lt
        else:
            versions.add(version)
    out: list[Finding] = []
    for group in sorted(groups):
        by_host = groups[group]
        found = None
        # One host always agrees with itself: most groups are done without comparing.
        values: dict[str, int | str] = {}
        odd = None
        if len(by_host) > 1:
            values = {h: "+".join(sorted(v)) for h, v in by_host.items()}
            odd = _odd_ones(values)
        if odd is not None:
            majority, hosts = odd
            shown = ", ".join(f"{h} ({values[h]})" for h in hosts[:4])
            found = Finding(
                rule="firmware_mismatch",
                severity="warning",
                subject="fabric",
                summary=(
                    f"NIC firmware differs across hosts ({group}): most run {majority}, "
                    f"but {shown}" + (f" and {len(hosts) - 4} more" if len(hosts) > 4 else "")
                ),
                evidence={"values": _grouped(values), "majority": majority, "group": group},
                next_step=(
                    f"on {hosts[0]}: ethtool -i {first[(group, hosts[0])].name}; align firmware "
                    "(mlxfwmanager --query) so all hosts behave the same under congestion"
                ),
            )
        ctx.report(out, found, ("firmware_mismatch", f"fabric/{group}"), ctx.now)
    out.extend(software_mismatch(ctx))  # one cause (hosts run different software), one rule
    return out
