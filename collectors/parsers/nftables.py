"""``nft -j list ruleset``: nftables' JSON output into a :class:`~collectors.ruleset.Ruleset`.

Schema: libnftables-json(5) (nftables' ``doc/libnftables-json.adoc``): a top-level
``{"nftables": [...]}`` list of objects ``metainfo``, ``table``, ``chain`` (base chains
carry ``type``, ``hook``, ``prio``, ``policy``; netdev ones ``dev``), ``set`` and ``map``
(``elem``: values, ``{"range": [a, b]}``, ``{"prefix": {...}}``; a verdict map's elements
are ``[key, verdict]`` pairs) and ``rule`` (``expr``: statements in order; ``match``
``{"op", "left", "right"}``; verdicts ``accept``/``drop``/``continue``/``return``
as ``{"accept": null}``, ``jump``/``goto`` with ``target``; ``reject``; ``vmap``).
Captures: ``tests/fixtures/firewall/*.json``, printed by nft 1.0.6 from the rulesets
beside them (their sources in ``tests/fixtures/firewall/SOURCES.md``).

Pure, bounded and never raising: a statement or expression this reader does not know
becomes an ``unknown`` match (the evaluator then says it could not decide), never a
guess; what it skipped is said in ``warnings``.
"""

from __future__ import annotations

from typing import Any

from collectors.numbers import json_loads, parse_uint
from collectors.ruleset import Chain, FirewallState, Match, PortRange, Rule, Ruleset, Verdict
from collectors.text import clean

MAX_RULES = 20_000  # a ruleset past this many rules is not evaluated rule by rule
MAX_ELEMS = 4096  # set elements kept per set (a larger set becomes an unknown match)
_VERDICTS = ("accept", "drop", "continue", "return", "queue")
# Standard priority names (nft(8) "CHAIN PRIORITIES") for output that prints them.
_PRIO_NAMES = {
    "raw": -300,
    "mangle": -150,
    "dstnat": -100,
    "filter": 0,
    "security": 50,
    "srcnat": 100,
}
_L4_NUMBERS = {
    1: "icmp",
    6: "tcp",
    17: "udp",
    58: "ipv6-icmp",
    132: "sctp",
    33: "dccp",
    136: "udplite",
    2: "igmp",
    47: "gre",
    50: "esp",
}
# Transport protocols whose header has a destination port (nft's "th" covers these).
TH_PROTOS = ("tcp", "udp", "udplite", "sctp", "dccp")
# Statements that only count, log or mark: they never decide a packet's fate.
_NO_FILTER = frozenset(
    {
        "counter",
        "log",
        "mangle",
        "notrack",
        "set",
        "map",
        "ct helper",
        "ct timeout",
        "ct expectation",
        "dup",
    }
)
_NAT = frozenset({"snat", "dnat", "masquerade", "redirect"})


class _Unknown(Exception):
    """An expression this reader does not evaluate (its readable text in args[0])."""


def parse_nft_json(text: str) -> tuple[Ruleset | None, list[str]]:
    """The ruleset in ``text`` (None when it is no nft JSON at all) and warnings."""
    try:
        doc = json_loads(text)  # a number beyond 64 bits is None: it costs its one match
    except ValueError as e:
        return None, [f"not nft JSON: {clean(str(e), 120)}"]
    items = doc.get("nftables") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return None, ["not nft JSON: no 'nftables' list"]
    rs = Ruleset(source="nft")
    sets: dict[tuple[str, str, str], dict[str, Any]] = {}
    rules: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict) or len(item) != 1:
            continue
        ((kind, body),) = item.items()
        if not isinstance(body, dict):
            continue
        if kind == "metainfo":
            v = body.get("version")
            rs.version = clean(str(v), 40) if v is not None else None
        elif kind == "chain":
            _chain(body, rs)
        elif kind in ("set", "map"):
            key = (str(body.get("family")), str(body.get("table")), str(body.get("name")))
            sets[key] = body
        elif kind == "rule":
            rules.append(body)
    if len(rules) > MAX_RULES:
        rs.warnings.append(f"{len(rules)} rules: more than {MAX_RULES}, not evaluated")
        rs.chains.clear()
        return rs, rs.warnings
    for body in rules:
        try:
            _rule(body, rs, sets)
        except Exception as e:  # one odd rule costs that rule (an unknown), never the set
            rs.warnings.add(f"rule not read: {clean(repr(e), 160)}")
    return rs, rs.warnings


def firewall_from_nft(status: str, detail: str | None, text: str) -> FirewallState:
    """A host's firewall state from its ``firewall`` section read with ``nft -j``."""
    if status != "ok":
        return FirewallState(status=status, tool="nft", detail=detail)
    rs, _ = parse_nft_json(text)
    if rs is None:
        return FirewallState(status="error", tool="nft", detail="output is not nft JSON")
    return FirewallState(status="ok", tool="nft", ruleset=rs)


def _prio(v: Any) -> int:
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return v
    if isinstance(v, dict):  # {"standard": "filter"} style, where a version prints one
        v = v.get("standard", "")
    s = str(v).replace(" ", "")
    for sign in ("+", "-"):
        name, op, n = s.partition(sign)
        num = parse_uint(n) if op and name in _PRIO_NAMES else None
        if num is not None:
            return _PRIO_NAMES[name] + (num if sign == "+" else -num)
    return _PRIO_NAMES.get(s, 0)


def _chain(body: dict[str, Any], rs: Ruleset) -> None:
    fam, table, name = (clean(str(body.get(k, "")), 128) for k in ("family", "table", "name"))
    c = Chain(family=fam, table=table, name=name)
    if "hook" in body:
        c.hook = clean(str(body["hook"]), 32)
        c.prio = _prio(body.get("prio", 0))
        pol = body.get("policy")
        c.policy = pol if pol in ("accept", "drop") else None
        c.type = clean(str(body.get("type", "")), 32) or None
        dev = body.get("dev")
        if isinstance(dev, str):
            c.device = clean(dev, 64)
        elif c.hook == "ingress":
            # nft 1.0.6 prints no "dev" for an ingress chain (the custom.json capture):
            # which interface it filters is not known, so it is not evaluated.
            rs.warnings.add(
                f"{fam} {table} {name}: ingress chain without its device "
                "in nft's JSON, not evaluated"
            )
    rs.chains[c.key] = c


def _rule(body: dict[str, Any], rs: Ruleset, sets: dict[tuple[str, str, str], Any]) -> None:
    fam, table, chain = (str(body.get(k, "")) for k in ("family", "table", "chain"))
    c = rs.chains.get((fam, table, chain))
    if c is None:
        return
    exprs = body.get("expr")
    if not isinstance(exprs, list):
        return
    handle = body.get("handle") if isinstance(body.get("handle"), int) else None
    comment = body.get("comment")
    matches: list[Match] = []
    words: list[str] = []
    verdict: Verdict | None = None
    vmap: tuple[Match, list[tuple[list[Match], Verdict, str]]] | None = None
    for st in exprs:
        if not isinstance(st, dict) or len(st) != 1 or verdict is not None:
            continue
        ((k, v),) = st.items()
        if k == "match" and isinstance(v, dict):
            got, txt = _match(v, fam, table, sets)
            matches.extend(got)
            words.append(txt)
        elif k in _VERDICTS:
            verdict = Verdict(k)
            words.append(k)
        elif k in ("jump", "goto") and isinstance(v, dict):
            verdict = Verdict(k, clean(str(v.get("target", "")), 128))
            words.append(f"{k} {verdict.target}")
        elif k == "reject":
            verdict = Verdict("reject")
            how = " ".join(
                clean(str(v.get(x)), 40)
                for x in ("type", "expr")
                if isinstance(v, dict) and v.get(x)
            )
            words.append("reject" + (f" with {how}" if how else ""))
        elif k in _NAT:
            verdict = Verdict("accept")  # a NAT statement ends the chain as an accept
            words.append(k)
        elif k == "vmap" and isinstance(v, dict):
            vmap = _vmap(v, fam, table, sets)
            words.append(vmap[0].text + " vmap {...}")
            break
        elif k in _NO_FILTER:
            continue
        else:
            txt = clean(k, 40)
            matches.append(Match("unknown", text=txt))
            words.append(txt)
    text = " ".join(words)
    if isinstance(comment, str) and comment:
        text += f' comment "{clean(comment, 80)}"'
    text = clean(text, 240)
    if vmap is None:
        c.rules.append(Rule(tuple(matches), verdict, text, handle))
        return
    key, entries = vmap
    for ms, vd, vtxt in entries:
        c.rules.append(Rule((*matches, *ms), vd, clean(f"{text} ({vtxt})", 240), handle))
    if key.field == "unknown":
        c.rules.append(Rule((*matches, key), Verdict("queue"), text, handle))


def _vmap(
    v: dict[str, Any], fam: str, table: str, sets: dict[tuple[str, str, str], Any]
) -> tuple[Match, list[tuple[list[Match], Verdict, str]]]:
    """A verdict map: its key, and per element (the key's matches, its verdict, text).

    An unknown key (or map) comes back as an ``unknown`` key and no elements: the rule
    then stands as "could be any verdict" (see _rule)."""
    data = v.get("data")
    if isinstance(data, str) and data.startswith("@"):
        m = sets.get((fam, table, data[1:]))
        elems = m.get("elem") if isinstance(m, dict) else None
    elif isinstance(data, dict):
        elems = data.get("set")
    else:
        elems = None
    try:
        left, pre = _left(v.get("key"))
    except _Unknown as e:
        return Match("unknown", text=f"{e.args[0]} vmap"), []
    out: list[tuple[list[Match], Verdict, str]] = []
    if not isinstance(elems, list) or len(elems) > MAX_ELEMS:
        return Match("unknown", text=f"{left[1]} vmap"), []
    for el in elems:
        if not (isinstance(el, list) and len(el) == 2 and isinstance(el[1], dict)):
            continue
        vd = _verdict(el[1])
        if vd is None:
            continue
        try:
            ms = _typed(left[0], "==", el[0], sets, fam, table)
        except _Unknown as e:
            ms = [Match("unknown", text=str(e.args[0]))]
        out.append((pre + ms, vd, f"{_show(el[0])}: {vd.kind}"))
    return Match(left[0], text=left[1]), out


def _verdict(v: dict[str, Any]) -> Verdict | None:
    if len(v) != 1:
        return None
    ((k, body),) = v.items()
    if k in _VERDICTS:
        return Verdict(k)
    if k in ("jump", "goto") and isinstance(body, dict):
        return Verdict(k, clean(str(body.get("target", "")), 128))
    return None


def _match(
    v: dict[str, Any], fam: str, table: str, sets: dict[tuple[str, str, str], Any]
) -> tuple[list[Match], str]:
    op = v.get("op", "==")
    right = v.get("right")
    try:
        (fld, ltxt), pre = _left(v.get("left"))
    except _Unknown as e:
        txt = f"{e.args[0]} {_opw(op)}{_show(right)}"
        return [Match("unknown", text=clean(txt, 160))], txt
    txt = clean(f"{ltxt} {_opw(op)}{_show(right, fld == 'iifname')}", 160)
    try:
        ms = _typed(fld, op, right, sets, fam, table)
    except _Unknown:
        return [*pre, Match("unknown", text=txt)], txt
    return [*pre, *(Match(m.field, m.values, m.negate, txt) for m in ms)], txt


def _opw(op: Any) -> str:
    return "" if op in ("==", "in") else f"{op} "


def _left(left: Any) -> tuple[tuple[str, str], list[Match]]:
    """(field, readable text) of a match's left side, and the matches it implies."""
    if isinstance(left, dict) and len(left) == 1:
        ((k, body),) = left.items()
        if k == "meta" and isinstance(body, dict):
            key = body.get("key")
            if key in ("iifname", "iif"):
                return ("iifname", str(key)), []
            if key in ("l4proto", "nfproto", "pkttype"):
                return (str(key), f"meta {key}"), []
            raise _Unknown(f"meta {clean(str(key), 20)}")
        if k == "ct" and isinstance(body, dict) and "dir" not in body:
            key = body.get("key")
            if key in ("state", "status"):
                return (f"ct_{key}", f"ct {key}"), []
            raise _Unknown(f"ct {clean(str(key), 20)}")
        if k == "payload" and isinstance(body, dict):
            proto, fld = body.get("protocol"), body.get("field")
            if fld == "dport" and proto in (*TH_PROTOS, "th"):
                protos = TH_PROTOS if proto == "th" else (str(proto),)
                return ("dport", f"{proto} dport"), [Match("l4proto", protos, text=str(proto))]
            if proto in ("ip", "ip6") and fld in ("saddr", "daddr", "protocol", "nexthdr"):
                nf = Match("nfproto", ("ipv4" if proto == "ip" else "ipv6",), text=str(proto))
                if fld in ("protocol", "nexthdr"):
                    return ("l4proto", f"{proto} {fld}"), [nf]
                return (str(fld), f"{proto} {fld}"), [nf]
            if isinstance(proto, str) and isinstance(fld, str):
                raise _Unknown(clean(f"{proto} {fld}", 40))
            raise _Unknown("payload")
        if k == "&" and isinstance(body, list) and len(body) == 2:
            inner = body[0]
            if isinstance(inner, dict) and inner.get("payload") == {
                "protocol": "tcp",
                "field": "flags",
            }:
                mask = body[1] if isinstance(body[1], list) else [body[1]]
                if {"syn", "ack"} <= set(map(str, mask)):
                    return ("tcp_syn", "tcp flags & (" + "|".join(map(str, mask)) + ")"), [
                        Match("l4proto", ("tcp",), text="tcp")
                    ]
            raise _Unknown("bitwise expression")
        raise _Unknown(clean(str(k), 30))
    raise _Unknown(clean(str(left), 40))


def _typed(
    fld: str, op: Any, right: Any, sets: dict[tuple[str, str, str], Any], fam: str, table: str
) -> list[Match]:
    """The matches of ``fld op right``; raises _Unknown for what it cannot represent."""
    if isinstance(right, str) and right.startswith("@"):
        s = sets.get((fam, table, right[1:]))
        elems = s.get("elem") if isinstance(s, dict) else None
        if s is None:
            raise _Unknown("set")
        right = {"set": elems if isinstance(elems, list) else []}
    if isinstance(right, dict) and "set" in right:
        elems = right["set"]
        if not isinstance(elems, list) or len(elems) > MAX_ELEMS:
            raise _Unknown("set")
    elif isinstance(right, list):  # flags: ct state in [established, related]
        elems = right
    else:
        elems = [right]
    negate = op == "!="
    if op not in ("==", "!=", "in"):
        if fld == "dport" and op in ("<", ">", "<=", ">=") and isinstance(right, int):
            lo, hi = {
                "<": (0, right - 1),
                "<=": (0, right),
                ">": (right + 1, 65535),
                ">=": (right, 65535),
            }[op]
            return [Match("dport", ((lo, hi),))]
        raise _Unknown(op)
    if fld == "tcp_syn":
        if elems == ["syn"]:
            return [Match("tcp_syn", ("syn",), negate)]
        raise _Unknown("tcp flags")
    if fld == "dport":
        return [Match("dport", tuple(_port_range(e) for e in elems), negate)]
    vals: list[str] = []
    for e in elems:
        if fld == "l4proto" and isinstance(e, int) and not isinstance(e, bool):
            e = _L4_NUMBERS.get(e, str(e))
        if fld in ("saddr", "daddr"):
            e = _net(e)
        if not isinstance(e, str | int) or isinstance(e, bool):
            raise _Unknown("value")
        vals.append(clean(str(e), 64))
    return [Match(fld, tuple(vals), negate)]


def _port_range(e: Any) -> PortRange:
    if isinstance(e, bool):
        raise _Unknown("port")
    if isinstance(e, int) and 0 <= e <= 65535:
        return e, e
    if isinstance(e, str) and (n := parse_uint(e)) is not None and n <= 65535:
        return n, n
    if isinstance(e, dict) and isinstance(e.get("range"), list) and len(e["range"]) == 2:
        lo, hi = (_port_range(x)[0] for x in e["range"])
        if lo <= hi:
            return lo, hi
    raise _Unknown("port")


def _net(e: Any) -> Any:
    if isinstance(e, dict) and isinstance(e.get("prefix"), dict):
        p = e["prefix"]
        return f"{p.get('addr')}/{p.get('len')}"
    if isinstance(e, dict) and isinstance(e.get("range"), list):
        raise _Unknown("address range")
    return e


def _show(v: Any, quote: bool = False) -> str:
    """A value as nft prints it, roughly: ``22``, ``{ 22, 80 }``, ``10.0.0.0/8``;
    ``quote``: strings in double quotes (interface names)."""
    if isinstance(v, dict):
        if "set" in v and isinstance(v["set"], list):
            return (
                "{ "
                + ", ".join(_show(x, quote) for x in v["set"][:8])
                + (", ..." if len(v["set"]) > 8 else "")
                + " }"
            )
        if "range" in v and isinstance(v["range"], list) and len(v["range"]) == 2:
            return f"{_show(v['range'][0])}-{_show(v['range'][1])}"
        if "prefix" in v and isinstance(v["prefix"], dict):
            return f"{v['prefix'].get('addr')}/{v['prefix'].get('len')}"
        return "{...}"
    if isinstance(v, list):
        return ",".join(_show(x) for x in v[:8])
    if isinstance(v, str) and not v.startswith("@") and (quote or not v.replace("-", "").isalnum()):
        return f'"{clean(v, 64)}"'
    return clean(str(v), 64)
