"""The firewall readers: nft JSON and iptables-save into one ruleset model, and the
probe's ``firewall`` section into what the host detail and the rule read."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.parsers.firewall import firewall_state, firewall_text
from collectors.parsers.iptables import parse_iptables_save
from collectors.parsers.nftables import parse_nft_json

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "firewall"


def test_nft_capture_chains_hooks_priorities_and_policies() -> None:
    rs, warnings = parse_nft_json((FIX / "firewalld.json").read_text())
    assert rs is not None and not warnings and rs.version == "1.0.6"
    base = rs.chains[("inet", "firewalld", "filter_INPUT")]
    assert (base.hook, base.prio, base.policy, base.type) == ("input", 10, "accept", "filter")
    assert rs.chains[("inet", "firewalld", "filter_IN_public")].hook is None
    texts = [r.text for r in base.rules]
    assert texts[0] == "ct state { established, related } accept"
    assert texts[-1] == "reject with icmpx admin-prohibited"


def test_nft_named_sets_resolve_and_vmap_becomes_one_rule_per_key() -> None:
    rs, _ = parse_nft_json((FIX / "custom.json").read_text())
    assert rs is not None
    rules = rs.chains[("inet", "filter", "input")].rules
    by_handle = {r.handle: r for r in rules}
    iif, proto, port = by_handle[11].matches
    assert proto.values == ("tcp",)
    assert iif.values == ("enp65s0f0np0", "enp65s0f1np1")
    assert port.values == ((18515, 18515), (29500, 29500), (32768, 60999))
    vmap = [r for r in rules if r.handle == 7]
    assert sorted(r.verdict.kind for r in vmap if r.verdict) == ["accept", "accept", "drop"]
    assert [m.field for m in by_handle[15].matches] == ["unknown"]  # limit rate


def test_netdev_ingress_chain_without_its_device_is_said_not_guessed() -> None:
    # nft 1.0.6 printed no "dev" for `type filter hook ingress device "lo"` (custom.nft)
    rs, warnings = parse_nft_json((FIX / "custom.json").read_text())
    assert rs is not None
    ing = rs.chains[("netdev", "ing", "ingress_tb")]
    assert (ing.hook, ing.device, ing.prio) == ("ingress", None, -500)
    assert warnings == [
        "netdev ing ingress_tb: ingress chain without its device in nft's JSON, not evaluated"
    ]


def test_iptables_save_tables_wildcards_and_targets() -> None:
    text = (
        "*filter\n:INPUT DROP [0:0]\n:MYCHAIN - [0:0]\n"
        "-A INPUT -i eth+ -p tcp -m multiport --dports 22,18515:18520 -m comment "
        '--comment "rdma ports" -j ACCEPT\n'
        '-A INPUT ! -i lo -m limit --limit 3/min -j LOG --log-prefix "x "\n'
        "-A INPUT -j MYCHAIN\nCOMMIT\n"
    )
    rs, warnings = parse_iptables_save(text)
    assert not warnings
    base = rs.chains[("ip", "filter", "INPUT")]
    assert (base.hook, base.policy) == ("input", "drop")
    first, log, jump = base.rules
    assert first.matches[0].values == ("eth*",)
    assert first.matches[2].values == ((22, 22), (18515, 18520))
    assert first.verdict is not None and first.verdict.kind == "accept"
    assert first.text.startswith("-A INPUT -i eth+")
    assert log.verdict is None and log.matches[0].negate
    assert jump.verdict is not None and (jump.verdict.kind, jump.verdict.target) == (
        "jump",
        "MYCHAIN",
    )


def test_section_states_say_why_nothing_was_read() -> None:
    assert firewall_text(firewall_state("missing", "needs root", "")) == (
        "firewall state unknown (needs root)"
    )
    assert firewall_text(firewall_state("truncated", "section cap 4096 bytes", "{")) == (
        "firewall state unknown (truncated)"
    )
    assert firewall_state("missing", "no nft or iptables-save", "").status == "missing"
    denied = firewall_state("error", "rc=1", "sudo: a password is required\n")
    assert denied.status == "needs root"
    bad = firewall_state("ok", None, "{not json")
    assert bad.status == "error" and not bad.known
    ok = firewall_state("ok", None, (FIX / "docker.json").read_text())
    assert ok.known and ok.tool == "nft"
    assert firewall_text(ok).startswith("firewall read (nft): 1 input base chain")
    ipt = firewall_state("ok", None, (FIX / "algo_iptables_save.txt").read_text())
    assert ipt.known and ipt.tool == "iptables-save"


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "nftables",
                        "rule",
                        "chain",
                        "expr",
                        "match",
                        "left",
                        "right",
                        "op",
                        "set",
                        "family",
                        "table",
                        "name",
                        "hook",
                        "payload",
                        "meta",
                        "key",
                        "vmap",
                        "data",
                        "jump",
                        "target",
                        "elem",
                        "range",
                    ]
                ),
                kids,
                max_size=4,
            )
        ),
        max_leaves=30,
    )
)
def test_nft_reader_never_raises(doc: object) -> None:
    parse_nft_json(json.dumps({"nftables": [doc]}))
    parse_nft_json(json.dumps(doc))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "*filter",
                ":INPUT DROP [0:0]",
                "-A INPUT",
                "-i",
                "eth+",
                "!",
                "-p",
                "tcp",
                "--dport",
                "1:",
                "99999",
                "-j",
                "ACCEPT",
                "-g",
                "x",
                '"',
                "--ctstate",
                "NEW",
                "COMMIT",
                "-m",
                "--tcp-flags",
                "SYN",
            ]
        ),
        max_size=30,
    )
)
def test_iptables_reader_never_raises(words: list[str]) -> None:
    parse_iptables_save(
        " ".join(words)
        .replace("COMMIT", "\nCOMMIT\n")
        .replace("-A", "\n-A")
        .replace(":INPUT", "\n:INPUT")
    )


def _strings(value: object) -> list[str]:
    import dataclasses

    if isinstance(value, str):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [s for f in dataclasses.fields(value) for s in _strings(getattr(value, f.name))]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def test_remote_names_comments_and_values_come_out_clean() -> None:
    evil = "x\x1b]52;c;cHduZWQ=\x07\x1b[2J\u202e\x00y"
    doc = {
        "nftables": [
            {"metainfo": {"version": evil}},
            {"table": {"family": "inet", "name": evil, "handle": 1}},
            {
                "chain": {
                    "family": "inet",
                    "table": evil,
                    "name": evil,
                    "handle": 1,
                    "type": evil,
                    "hook": "input",
                    "prio": 0,
                    "policy": "drop",
                }
            },
            {
                "rule": {
                    "family": "inet",
                    "table": evil,
                    "chain": evil,
                    "handle": 2,
                    "comment": evil,
                    "expr": [
                        {
                            "match": {
                                "op": "==",
                                "left": {"meta": {"key": "iifname"}},
                                "right": evil,
                            }
                        },
                        {"match": {"op": "==", "left": {"meta": {"key": evil}}, "right": evil}},
                        {evil: None},
                        {"jump": {"target": evil}},
                    ],
                }
            },
        ]
    }
    fw = firewall_state("ok", evil, json.dumps(doc))
    ipt = firewall_state(
        "ok",
        None,
        f"*filter\n:INPUT DROP [0:0]\n-A INPUT -i {evil} "
        f"-m comment --comment {evil} -j {evil}\nCOMMIT\n",
    )
    bad = firewall_state("error", evil, evil)
    for s in _strings(fw) + _strings(ipt) + _strings(bad) + [firewall_text(bad)]:
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in s), s
