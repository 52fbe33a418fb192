"""The probe's ``firewall`` section into a :class:`~collectors.ruleset.FirewallState`.

The section holds ``nft -j list ruleset`` (JSON, :mod:`collectors.parsers.nftables`) or
``iptables-save`` (text, :mod:`collectors.parsers.iptables`), told apart by their first
character; its status says why nothing was read: ``missing`` with ``needs root`` (the
probe ran unprivileged and was not told to use ``sudo -n``) or ``no nft or
iptables-save``; ``truncated`` when the ruleset was larger than the section's byte cap
(what was read is not the whole ruleset: no verdict may rest on it); ``error`` or
``timeout`` when the tool failed.
"""

from __future__ import annotations

from collectors.parsers.iptables import parse_iptables_save
from collectors.parsers.nftables import parse_nft_json
from collectors.ruleset import FirewallState
from collectors.text import clean


def firewall_state(status: str, detail: str | None, text: str) -> FirewallState:
    """What the section says; never raises."""
    det = clean(detail, 160) if detail else None
    if status == "missing":
        why = "needs root" if det and "root" in det else "missing"
        return FirewallState(status=why, detail=det)
    if status == "truncated":
        return FirewallState(status="truncated", detail=det)
    if status != "ok":
        first = text.strip().splitlines()[0] if text.strip() else ""
        if (
            "permission denied" in first.lower()
            or "not permitted" in first.lower()
            or ("password" in first.lower() and "sudo" in first.lower())
        ):
            return FirewallState(status="needs root", detail=clean(first, 160))
        return FirewallState(
            status="error", detail=clean(" ".join(x for x in (status, det, first[:120]) if x), 200)
        )
    return firewall_read(text)


def firewall_read(text: str) -> FirewallState:
    """A ruleset the tool printed (the section said ``ok``)."""
    body = text.lstrip()
    if body.startswith("{"):
        # nft prints its JSON on one line, which the probe sends in pieces of at most
        # 60000 bytes (a line's cap is 64 KiB): joined as they came.
        rs, _ = parse_nft_json(body.replace("\n", ""))
        if rs is None:
            return FirewallState(status="error", tool="nft", detail="output is not nft JSON")
        return FirewallState(status="ok", tool="nft", ruleset=rs)
    family = "ip6" if "ip6tables-save" in body[:200] else "ip"
    rs6, _ = parse_iptables_save(body, family)
    return FirewallState(status="ok", tool="iptables-save", ruleset=rs6)


def firewall_text(fw: FirewallState | None) -> str:
    """One line for the host detail: what fabtop knows of the host's packet filter."""
    if fw is None:
        return "firewall not read"
    if fw.status == "ok" and fw.ruleset is not None:
        n = sum(len(c.rules) for c in fw.ruleset.chains.values())
        bases = len(fw.ruleset.base_chains("input"))
        return f"firewall read ({fw.tool}): {bases} input base chain(s), {n} rule(s)"
    return f"firewall state unknown ({unknown_reason(fw)})"


def unknown_reason(fw: FirewallState) -> str:
    """Why a host's ruleset was not read, in a few words."""
    return {
        "needs root": "needs root",
        "truncated": "truncated",
        "missing": "no nft or iptables-save",
    }.get(fw.status, fw.detail or fw.status)
