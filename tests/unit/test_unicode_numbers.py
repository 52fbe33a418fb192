"""Unicode digits are no numbers (issue 27, class 10).

``str.isdigit()`` is true for "²" and "①", which ``int()`` refuses with a ValueError;
``int()`` and ``float()`` read "٣" (Arabic-Indic) and full-width digits as 3. Every
number from a node or a config goes through collectors/numbers.py, which takes ASCII
digits only: a Unicode digit gives no value and a warning (a config error for a config
field), never an exception and never a number read from a look-alike.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.numbers import is_digits, parse_float, parse_hex, parse_int, parse_uint
from collectors.parsers.iptables import parse_iptables_save
from collectors.parsers.macos_thunderbolt import parse_sp_thunderbolt
from collectors.parsers.nftables import parse_nft_json
from collectors.parsers.prometheus_text import parse_inference_metrics
from fabtop.commands.cli import EX_USAGE
from fabtop.commands.diff import DiffError, check_doc
from fabtop.config import ConfigError, expand, load_config
from fabtop.run.export import parse_listen
from tests.unit.remote_inputs import MAC, PARSERS, REPO_FIXTURES, call, captures
from tui.main import main

# superscript two, Arabic-Indic three, circled one, full-width three
UNICODE_DIGITS = ("²", "٣", "①", "\uff13")
LOOK_ALIKES = (*UNICODE_DIGITS, "4²", "١٢", "1_0")


def test_the_number_readers_take_ascii_digits_only() -> None:
    assert "²".isdigit() and "①".isdigit() and int("٣") == 3 and float("\uff13") == 3.0
    for text in LOOK_ALIKES:
        assert parse_uint(text) is None and parse_int(text) is None, text
        assert parse_int("-" + text) is None and parse_float(text) is None, text
        assert parse_float(text + ".5") is None and parse_hex("0x" + text) is None, text
        assert not is_digits(text), text
    assert parse_uint("42") == 42 and parse_float("-1.5e3") == -1500.0 and is_digits("007")


STUDIO = (
    REPO_FIXTURES
    / "darwin"
    / "system_profiler_SPThunderboltDataType_json_macstudio_m3ultra_tb5_omlx.json"
)


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
def test_a_macs_thunderbolt_section_is_kept(digit: str) -> None:
    """The instance: a receptacle id of "²" passed isdigit() and raised in int(): the
    Mac's whole Thunderbolt section was lost. Now that receptacle is unknown, said."""
    text = re.sub(
        r'"receptacle_id_key" : "\d"',
        f'"receptacle_id_key" : "{digit}"',
        STUDIO.read_text(),
        count=1,
    )
    assert digit in text
    parsed = parse_sp_thunderbolt(text)
    assert any(f"'{digit}' is no receptacle number" in w for w in parsed.warnings)
    assert [b.receptacle for b in parsed.buses].count(None) == 1
    assert any(b.peer_uid for b in parsed.buses)

    sections = [
        Section(
            s.kind,
            s.subject,
            s.read_ns,
            s.status,
            s.detail,
            _ids_to(s.text, digit) if s.kind == "sp_thunderbolt" else s.text,
        )
        for s in MAC.sections
    ]
    sample = assemble("mac1", Frame(MAC.seq, MAC.clock_ns, MAC.uptime_s, MAC.unix_s, sections), {})
    assert sample.thunderbolt is not None and sample.thunderbolt.peers
    assert not any("error" in w for w in sample.warnings), sample.warnings
    assert any("is no receptacle number" in w for w in sample.warnings)


def _ids_to(text: str, digit: str) -> str:
    doc = json.loads(text)
    for bus in doc["SPThunderboltDataType"]:
        tag = bus.get("receptacle_1_tag")
        if isinstance(tag, dict):
            tag["receptacle_id_key"] = digit
    return json.dumps(doc)


@pytest.mark.parametrize("port", [*UNICODE_DIGITS, "1-²", "٣-\uff15"])
def test_firewall_ports_of_unicode_digits_are_a_config_error(
    tmp_path: Path, port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The instance: ``[firewall] ports = ["²"]`` printed "internal error"."""
    p = tmp_path / "fabtop.toml"
    p.write_text(f'[[host]]\nname = "n1"\n\n[firewall]\nports = ["{port}"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    msg = str(e.value)  # one line naming the file, the field and what it got
    bad = next(part for part in port.split("-") if not part.isascii())
    assert msg.startswith(f"{p}: [firewall] ports") and f"'{bad}'" in msg and "\n" not in msg
    assert "1..65535" in msg
    assert main(["doctor", "-c", str(p)]) == EX_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[firewall] ports" in err
    assert "internal error" not in err


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
def test_other_number_fields_refuse_unicode_digits(digit: str) -> None:
    with pytest.raises(ConfigError) as e:
        expand(f"node[{digit}-3]", "command line")
    assert "bad hostlist expression" in str(e.value) and "int()" not in str(e.value)
    with pytest.raises(ValueError, match="--listen"):
        parse_listen(f"127.0.0.1:{digit}")
    doc = {
        "schema": "fabtop.snapshot/1",
        "taken_at": "2026-01-01T00:00:00Z",
        "hosts": [{"name": "n1", "links": [{"id": "eth0", "metrics": {"rx_pause": {digit: 1}}}]}],
    }
    with pytest.raises(DiffError, match=r"priority .* is not 0\.\.7"):
        check_doc(doc, "a.json")


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
def test_firewall_rulesets_with_unicode_digits_cost_their_rule(digit: str) -> None:
    nft = {
        "nftables": [
            {
                "chain": {
                    "family": "inet",
                    "table": "filter",
                    "name": "input",
                    "hook": "input",
                    "type": "filter",
                    "prio": f"filter+{digit}",
                    "policy": "drop",
                }
            },
            {
                "rule": {
                    "family": "inet",
                    "table": "filter",
                    "chain": "input",
                    "expr": [
                        {
                            "match": {
                                "op": "==",
                                "left": {"payload": {"protocol": "tcp", "field": "dport"}},
                                "right": digit,
                            }
                        },
                        {"accept": None},
                    ],
                }
            },
            {
                "rule": {
                    "family": "inet",
                    "table": "filter",
                    "chain": "input",
                    "expr": [
                        {
                            "match": {
                                "op": "==",
                                "left": {"payload": {"protocol": "tcp", "field": "dport"}},
                                "right": 22,
                            }
                        },
                        {"accept": None},
                    ],
                }
            },
        ]
    }
    rs, warnings = parse_nft_json(json.dumps(nft))
    assert rs is not None
    (chain,) = rs.chains.values()
    assert chain.prio == 0 and len(chain.rules) == 2  # the odd one an unknown match
    assert not any("rule not read" in w for w in warnings)
    ipt, warnings = parse_iptables_save(
        f"*filter\n:INPUT DROP [0:0]\n-A INPUT -p tcp --dport {digit} -j ACCEPT\n"
        "-A INPUT -p tcp --dport 22 -j ACCEPT\nCOMMIT\n"
    )
    assert [w for w in warnings if "not read" in w] == [
        f"line 3 not read: ValueError(\"bad port '{digit}'\")"
    ]
    assert len(ipt.chains[("ip", "filter", "INPUT")].rules) == 1


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
def test_a_metrics_value_of_a_unicode_digit_costs_that_value(digit: str) -> None:
    """The library's float() read "٣" as 3 and stopped the whole page at "²"."""
    got = parse_inference_metrics(
        f"vllm:generation_tokens_total {digit}\nvllm:prompt_tokens_total 7\n", "u"
    )
    assert got.generated_tokens_total is None and got.prompt_tokens_total == 7.0
    # The page was read (no error: its token rate stands), the value named in a warning.
    assert got.error is None and any("no ASCII number" in w for w in got.warnings)


# --- the class: every parser, every number of its captures ---------------------------


def _numbers(obj: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """Every number in a parser's result, with where it is."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return
    if isinstance(obj, int | float):
        yield path, obj
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _numbers(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(k, f"{path}[key]")
            yield from _numbers(v, f"{path}[{k!r}]")
    elif isinstance(obj, list | tuple | set | frozenset):
        for i, v in enumerate(sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj):
            yield from _numbers(v, f"{path}[{i}]")


# A number of its own: digits with no letter, digit or "_" on either side ("eth0" is a
# name, and names are checked as names).
_NUMBER = re.compile("(?<![A-Za-z0-9_])([0-9]+)(?![A-Za-z0-9_])")
# The Prometheus text parser stops the whole page at a letter where a value goes (a
# Unicode digit costs only its sample): there, no number may come that the capture
# does not hold.
_PAGE = (
    "inference_page.parse_inference_page",
    "prometheus_text.parse_inference_metrics",
    "prometheus_text.parse_prometheus_text",
)


def _number_runs(
    text: str, lines: int = 24, runs: int = 3
) -> Iterator[tuple[str, Callable[[str], str]]]:
    """For a few numbers of ``text``: where, and the text with that number replaced."""
    rows = text.split("\n")
    step = max(1, len(rows) // lines)
    for li in range(0, len(rows), step):
        parts = _NUMBER.split(rows[li])
        for pi in [i for i in range(1, len(parts), 2)][:runs]:

            def put(tok: str, li: int = li, pi: int = pi, parts: list[str] = parts) -> str:
                new = parts.copy()
                new[pi] = tok
                return "\n".join([*rows[:li], "".join(new), *rows[li + 1 :]])

            yield f"line {li} number {pi // 2}", put


@pytest.mark.parametrize(("name", "fn"), PARSERS, ids=[n for n, _ in PARSERS])
def test_every_parser_reads_a_unicode_digit_as_no_number(name: str, fn: Callable[..., Any]) -> None:
    """A Unicode digit where a capture has a number reads as no number there does: the
    same numbers come out, in the same places (patterns match [0-9], never \\d), and
    nothing raises."""
    for text in captures(name):
        whole = Counter(v for _, v in _numbers(call(fn, text)))
        for where, put in _number_runs(text):
            want = list(_numbers(call(fn, put("x"))))
            for digit in UNICODE_DIGITS:
                got = [(path.replace(digit, "x"), v) for path, v in _numbers(call(fn, put(digit)))]
                if name in _PAGE:  # (how many values were left out is a count, not one)
                    read = Counter(v for path, v in got if not path.startswith(".non_finite"))
                    assert not read - whole, f"{where}, {digit!r}"
                else:
                    assert got == want, f"{name}, {where}, {digit!r}"
