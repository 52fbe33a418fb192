"""What a simulated host's ``nft -j list ruleset`` prints (the probe's ``firewall`` section).

Shaped as nft 1.0.6 prints JSON (the captures in ``tests/fixtures/firewall``: the same
objects, keys and order): ``metainfo``, then each table, its chains, its rules.

Profiles:
- ``docker``: what Docker leaves on a host (the ``docker.json`` capture): an ``INPUT``
  chain that accepts everything and a ``FORWARD`` policy of drop, which never sees a
  packet for the host itself. The healthy demo runs it: nothing to find.
- ``needs_root``, ``truncated``: what the probe sends when it may not read the ruleset,
  or when the ruleset is larger than the section's byte cap.
- ``firewalld``: firewalld's default zone ``public`` on every interface (the
  ``firewalld.json`` capture's chains, the thunderbolt0 line taken out): only ssh and
  cockpit come in, the rest is rejected, so perftest, the rendezvous, NCCL's bootstrap
  and all of IP over Thunderbolt are blocked: the cluster guide's pitfall.
"""

from __future__ import annotations

import json
from typing import Any

from collectors.frames import Section

PROFILES = ("docker", "firewalld", "needs_root", "truncated")
_META = {
    "metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}
}


def section(profile: str, clock_ns: int) -> Section:
    """The probe's ``firewall`` section for ``profile`` (see the module's docstring)."""
    if profile == "needs_root":
        return Section("firewall", None, clock_ns, "missing", "needs root", "")
    if profile == "truncated":
        text = nft_json("firewalld")[:4000]
        return Section("firewall", None, clock_ns, "truncated", "section cap 4096 bytes", text)
    return Section("firewall", None, clock_ns, "ok", None, nft_json(profile))


def nft_json(profile: str) -> str:
    """``nft -j list ruleset`` of ``profile`` (one line, as nft prints it); a profile that
    is itself nft JSON (a test's own ruleset) is printed as it is."""
    if profile.lstrip().startswith("{"):
        return profile
    items: list[dict[str, Any]] = [_META]
    if profile == "firewalld":
        items += _firewalld()
    elif profile == "docker":
        items += _docker()
    return json.dumps({"nftables": items})


class _Table:
    def __init__(self, family: str, name: str, handle: int, out: list[dict[str, Any]]) -> None:
        self.family, self.name, self.out = family, name, out
        self.handles = 0
        out.append({"table": {"family": family, "name": name, "handle": handle}})

    def chain(
        self,
        name: str,
        hook: str | None = None,
        prio: int = 0,
        policy: str = "accept",
        type_: str = "filter",
    ) -> None:
        self.handles += 1
        body: dict[str, Any] = {
            "family": self.family,
            "table": self.name,
            "name": name,
            "handle": self.handles,
        }
        if hook is not None:
            body.update(type=type_, hook=hook, prio=prio, policy=policy)
        self.out.append({"chain": body})

    def rule(self, chain: str, *expr: dict[str, Any]) -> None:
        self.handles += 1
        self.out.append(
            {
                "rule": {
                    "family": self.family,
                    "table": self.name,
                    "chain": chain,
                    "handle": self.handles,
                    "expr": list(expr),
                }
            }
        )


def _m(left: dict[str, Any], right: Any, op: str = "==") -> dict[str, Any]:
    return {"match": {"op": op, "left": left, "right": right}}


_IIF = {"meta": {"key": "iifname"}}
_OIF = {"meta": {"key": "oifname"}}
_CT = {"ct": {"key": "state"}}
_ACCEPT: dict[str, Any] = {"accept": None}
_COUNTER = {"counter": {"packets": 0, "bytes": 0}}


def _jump(t: str) -> dict[str, Any]:
    return {"jump": {"target": t}}


def _goto(t: str) -> dict[str, Any]:
    return {"goto": {"target": t}}


def _docker() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    t = _Table("ip", "filter", 1, out)
    t.chain("INPUT", "input")
    t.chain("FORWARD", "forward", policy="drop")
    t.chain("OUTPUT", "output")
    t.chain("DOCKER")
    t.chain("DOCKER-ISOLATION-STAGE-1")
    t.chain("DOCKER-USER")
    t.rule("FORWARD", _COUNTER, _jump("DOCKER-USER"))
    t.rule("FORWARD", _COUNTER, _jump("DOCKER-ISOLATION-STAGE-1"))
    t.rule(
        "FORWARD", _m(_OIF, "docker0"), _m(_CT, ["established", "related"], "in"), _COUNTER, _ACCEPT
    )
    t.rule("FORWARD", _m(_OIF, "docker0"), _COUNTER, _jump("DOCKER"))
    t.rule("FORWARD", _m(_IIF, "docker0"), _m(_OIF, "docker0", "!="), _COUNTER, _ACCEPT)
    t.rule("DOCKER-ISOLATION-STAGE-1", _COUNTER, {"return": None})
    t.rule("DOCKER-USER", _COUNTER, {"return": None})
    return out


def _firewalld() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    t = _Table("inet", "firewalld", 1, out)
    t.chain("filter_INPUT", "input", prio=10)
    t.chain("filter_FORWARD", "forward", prio=10)
    for c in (
        "filter_INPUT_POLICIES_pre",
        "filter_INPUT_ZONES",
        "filter_INPUT_POLICIES_post",
        "filter_IN_public",
        "filter_IN_public_pre",
        "filter_IN_public_log",
        "filter_IN_public_deny",
        "filter_IN_public_allow",
        "filter_IN_public_post",
    ):
        t.chain(c)
    new = _m(_CT, {"set": ["new", "untracked"]})
    t.rule("filter_INPUT", _m(_CT, {"set": ["established", "related"]}), _ACCEPT)
    t.rule("filter_INPUT", _m({"ct": {"key": "status"}}, "dnat", "in"), _ACCEPT)
    t.rule("filter_INPUT", _m(_IIF, "lo"), _ACCEPT)
    t.rule("filter_INPUT", _m(_CT, "invalid", "in"), {"drop": None})
    t.rule("filter_INPUT", _jump("filter_INPUT_POLICIES_pre"))
    t.rule("filter_INPUT", _jump("filter_INPUT_ZONES"))
    t.rule("filter_INPUT", _jump("filter_INPUT_POLICIES_post"))
    t.rule("filter_INPUT", {"reject": {"type": "icmpx", "expr": "admin-prohibited"}})
    t.rule("filter_FORWARD", _m(_CT, {"set": ["established", "related"]}), _ACCEPT)
    t.rule("filter_FORWARD", {"reject": {"type": "icmpx", "expr": "admin-prohibited"}})
    t.rule("filter_INPUT_ZONES", _goto("filter_IN_public"))
    for sub in ("pre", "log", "deny", "allow", "post"):
        t.rule("filter_IN_public", _jump(f"filter_IN_public_{sub}"))
    t.rule(
        "filter_IN_public",
        _m({"meta": {"key": "l4proto"}}, {"set": ["icmp", "ipv6-icmp"]}),
        _ACCEPT,
    )
    for port in (22, 9090):
        t.rule(
            "filter_IN_public_allow",
            _m({"payload": {"protocol": "tcp", "field": "dport"}}, port),
            new,
            _ACCEPT,
        )
    return out
