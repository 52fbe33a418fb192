"""``iptables-save`` (and ``ip6tables-save``) text into a :class:`~collectors.ruleset.Ruleset`.

Format (iptables-save(8), iptables-extensions(8)): ``*table`` opens a table, ``:CHAIN
POLICY [packets:bytes]`` declares a chain (``-`` for a user chain), ``-A CHAIN <options>``
appends a rule, ``COMMIT`` closes the table. Options as iptables prints them: ``-i``,
``-p``, ``-s``, ``-d`` (``!`` before an option negates it), ``-m tcp --dport N``,
``-m multiport --dports a,b:c``, ``-m conntrack --ctstate A,B`` (``-m state --state``),
``--ctstatus``, ``--syn``/``--tcp-flags``, ``-m pkttype --pkt-type``, ``-m addrtype
--dst-type``, ``-m comment --comment "..."``, ``-j TARGET [target options]``, ``-g``.
Capture: ``tests/fixtures/firewall/algo_iptables_save.txt`` (iptables-save v1.6.0,
trailofbits/algo#296); SOURCES.md beside it.

The input hook's chains are the built-in ``INPUT`` of the mangle (priority -150), filter
(0), security (50) and nat (100) tables, as the kernel registers them. Pure, bounded,
never raising: an option it does not know is an ``unknown`` match, with its text.
"""

from __future__ import annotations

import shlex

from collectors.numbers import parse_uint
from collectors.ruleset import Chain, Match, PortRange, Rule, Ruleset, Verdict
from collectors.text import clean

MAX_LINES = 50_000
# iptables-save prints a rule on one line: its options, a comment of at most 256
# characters, a list of at most 15 ports. A longer line is not read (said), so that no
# line costs more than a bounded split.
MAX_LINE = 4096
_INPUT_PRIO = {"mangle": -150, "filter": 0, "security": 50, "nat": 100}
_TARGETS = {
    "ACCEPT": "accept",
    "DROP": "drop",
    "REJECT": "reject",
    "RETURN": "return",
    "QUEUE": "queue",
    "NFQUEUE": "queue",
}
# Targets that only log, mark or count: the packet goes on to the next rule.
_PASS_TARGETS = frozenset(
    {
        "LOG",
        "NFLOG",
        "ULOG",
        "MARK",
        "CONNMARK",
        "TRACE",
        "AUDIT",
        "CT",
        "NOTRACK",
        "TCPMSS",
        "DSCP",
        "TOS",
        "CLASSIFY",
    }
)
_PROTO_NUMBERS = {"1": "icmp", "6": "tcp", "17": "udp", "58": "ipv6-icmp", "132": "sctp"}
# Module options whose value is read here; every other "--x value" is an unknown match.
_FLAG_ONLY = frozenset({"--syn"})


def parse_iptables_save(text: str, family: str = "ip") -> tuple[Ruleset, list[str]]:
    """The ruleset in ``text``; ``family``: ``ip`` (iptables-save) or ``ip6``."""
    rs = Ruleset(source="iptables")
    table = ""
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        rs.warnings.append(f"{len(lines)} lines: more than {MAX_LINES}, not evaluated")
        return rs, rs.warnings
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("*"):
            table = clean(line[1:], 32)
        elif line.startswith(":"):
            parts = line[1:].split()
            if not parts:
                continue
            name = clean(parts[0], 128)
            c = Chain(family=family, table=table, name=name)
            pol = parts[1] if len(parts) > 1 else "-"
            if pol != "-":  # a built-in chain
                c.policy = "drop" if pol == "DROP" else "accept"
                if name == "INPUT" and table in _INPUT_PRIO:
                    c.hook, c.prio, c.type = "input", _INPUT_PRIO[table], "filter"
            rs.chains[c.key] = c
        elif len(line) > MAX_LINE:
            rs.warnings.add(f"line {n} not read: longer than {MAX_LINE} characters")
        elif line.startswith("-A "):
            try:
                _rule(line, table, family, rs)
            except Exception as e:  # one odd line costs that line
                rs.warnings.add(f"line {n} not read: {clean(repr(e), 120)}")
    return rs, rs.warnings


def _rule(line: str, table: str, family: str, rs: Ruleset) -> None:
    # shlex reads a character at a time in Python (~1 us each): only a line with quotes
    # or escapes needs it; a plain one splits the same at its blanks.
    if "'" in line or '"' in line or "\\" in line or not (line.isascii() and line.isprintable()):
        try:
            toks = shlex.split(line)
        except ValueError:
            toks = line.split()
    else:
        toks = line.split(" ")
        toks = [t for t in toks if t]
    chain = rs.chains.get((family, table, toks[1] if len(toks) > 1 else ""))
    if chain is None:
        return
    text = clean(line, 240)
    matches: list[Match] = []
    verdict: Verdict | None = None
    i, neg = 2, False
    while i < len(toks):
        t = toks[i]
        if t == "!":
            neg = True
            i += 1
            continue
        val = toks[i + 1] if i + 1 < len(toks) else ""
        if t in ("-i", "--in-interface"):
            matches.append(Match("iifname", (_ifname(val),), neg, f"{'! ' if neg else ''}-i {val}"))
            i += 2
        elif t in ("-p", "--protocol"):
            p = _PROTO_NUMBERS.get(val, val.lower())
            if p != "all":
                matches.append(Match("l4proto", (clean(p, 32),), neg, f"-p {val}"))
            i += 2
        elif t in ("-s", "--source", "-d", "--destination"):
            if val not in ("0.0.0.0/0", "::/0"):
                fld = "saddr" if t in ("-s", "--source") else "daddr"
                matches.append(Match(fld, (clean(val, 64),), neg, f"{t} {val}"))
            i += 2
        elif t in ("-m", "--match"):
            i += 2  # the module's options follow
        elif t in ("--dport", "--destination-port", "--dports", "--destination-ports"):
            ports = tuple(_ports(val))
            matches.append(Match("dport", ports, neg, f"{t} {val}"))
            i += 2
        elif t in ("--ctstate", "--state"):
            states = tuple(s.lower() for s in val.split(",") if s)
            matches.append(Match("ct_state", states, neg, f"{t} {val}"))
            i += 2
        elif t == "--ctstatus":
            matches.append(
                Match("ct_status", tuple(s.lower() for s in val.split(",")), neg, f"{t} {val}")
            )
            i += 2
        elif t == "--syn":
            matches.append(Match("tcp_syn", ("syn",), neg, "--syn"))
            i += 1
        elif t == "--tcp-flags" and i + 2 < len(toks):
            mask, comp = toks[i + 1].split(","), toks[i + 2]
            if {"SYN", "ACK"} <= set(mask) and comp == "SYN":
                matches.append(Match("tcp_syn", ("syn",), neg, f"--tcp-flags {toks[i + 1]} SYN"))
            else:
                matches.append(Match("unknown", (), neg, f"--tcp-flags {toks[i + 1]} {comp}"))
            i += 3
        elif t == "--pkt-type":
            matches.append(Match("pkttype", (val.lower(),), neg, f"{t} {val}"))
            i += 2
        elif t == "--dst-type":
            kinds = {
                "LOCAL": "host",
                "UNICAST": "host",
                "BROADCAST": "broadcast",
                "MULTICAST": "multicast",
            }
            vals = tuple(kinds[v] for v in val.split(",") if v in kinds)
            ok = len(vals) == len(val.split(","))
            matches.append(
                Match("pkttype" if ok else "unknown", vals if ok else (), neg, f"--dst-type {val}")
            )
            i += 2
        elif t == "--comment":
            i += 2
        elif t in ("-j", "--jump", "-g", "--goto"):
            verdict = _target(t, val, (family, table, val) in rs.chains)
            break  # what follows are the target's own options
        elif t.startswith("-"):
            # An option this reader does not evaluate, with its values up to the next one.
            j = i + 1
            while j < len(toks) and not toks[j].startswith("-") and toks[j] != "!":
                j += 1
            if t not in _FLAG_ONLY:
                matches.append(Match("unknown", (), neg, clean(" ".join(toks[i:j]), 80)))
            i = j
        else:
            i += 1
        neg = False
    chain.rules.append(Rule(tuple(_cleaned(m) for m in matches), verdict, text))


def _cleaned(m: Match) -> Match:
    """``m`` with its text and names cleaned (they are the node's bytes)."""
    vals = tuple(clean(v, 64) if isinstance(v, str) else v for v in m.values)
    return Match(m.field, vals, m.negate, clean(m.text, 120))  # type: ignore[arg-type]


def _target(opt: str, name: str, chain: bool) -> Verdict | None:
    """``chain``: ``name`` is a chain of this table (declared before any rule)."""
    if opt in ("-g", "--goto"):
        return Verdict("goto", clean(name, 128))
    if chain:
        return Verdict("jump", clean(name, 128))
    if name in _TARGETS:
        return Verdict(_TARGETS[name])
    if name in _PASS_TARGETS or not name:
        return None
    if name in ("SNAT", "DNAT", "MASQUERADE", "REDIRECT"):
        return Verdict("accept")  # NAT targets end the chain like an accept
    return Verdict("queue")  # an extension target this reader does not know: either way


def _ifname(v: str) -> str:
    """iptables' ``eth+`` wildcard as the evaluator's ``eth*``."""
    return clean(v[:-1] + "*" if v.endswith("+") else v, 64)


def _ports(v: str) -> list[PortRange]:
    out: list[PortRange] = []
    for part in v.split(","):
        lo, sep, hi = part.partition(":")
        a = parse_uint(lo) if lo else 0
        b = parse_uint(hi) if hi else (65535 if sep else a)
        if a is None or b is None or not 0 <= a <= b <= 65535:
            raise ValueError(f"bad port {part[:20]!r}")
        out.append((a, b))
    return out
