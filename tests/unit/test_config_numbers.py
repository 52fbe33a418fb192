"""Every number a config file holds goes through one check: bad is one line naming the field.

A bool is not a number, TOML's nan and inf are not numbers, Unicode digits are not digits
("²" made int() raise and fabtop print "internal error"; "٣" was read as port 3), and each
field has a range. The table below is every number field of the config.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fabtop.config import ConfigError, load_config
from fabtop.core.thresholds import DEFAULT_THRESHOLDS, threshold_range
from tui.main import main

HOST = '[[host]]\nname = "n1"\n'

# (field as the error names it, TOML that puts VALUE there). Each gets every bad value.
NUMBER_FIELDS = [
    ("field 'interval'", "interval = {v}\n" + HOST),
    ("[firewall] ports", HOST + "[firewall]\nports = [18515, {v}]\n"),
    ("[firewall] ports", HOST + '[firewall]\nports = ["{s}-60999"]\n'),
    ("[firewall] ports", HOST + '[firewall]\nports = ["1-{s}"]\n'),
    ("host 'n1': field 'ssh'", '[[host]]\nname = "n1"\nssh = "admin@n1:{s}"\n'),
    ("host 'n1': field 'inference'", HOST + 'inference = "http://127.0.0.1:{s}/metrics"\n'),
    ("[dashboard] fold_past_links", HOST + "[dashboard]\nfold_past_links = {v}\n"),
    *(
        (f"[thresholds] {name}", f"[thresholds]\n{name} = {{v}}\n" + HOST)
        for name in DEFAULT_THRESHOLDS
    ),
]
# TOML values ({v}) and text inside a string ({s}) that no number field takes.
BAD_VALUES = [
    "true",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "-1",
    "99999999999999999999999",
    '"1.5"',
    '"²"',
]
BAD_TEXT = [
    "\u00b2",
    "\u0663",
    "\uff13",
    "0",
    "99999",
    "99999999999999999999999",
    "1_0",
    "+1",
    "0x10",
    "-1",
]


def _cases() -> list[tuple[str, str]]:
    out = []
    for name, template in NUMBER_FIELDS:
        if "{v}" in template:
            out += [(name, template.replace("{v}", v)) for v in BAD_VALUES]
        else:
            out += [(name, template.replace("{s}", s)) for s in BAD_TEXT]
    return out


@pytest.mark.parametrize(
    ("field", "toml"),
    [
        *_cases(),
        ("field 'interval'", 'interval = "1"\n' + HOST),
        ("[dashboard] fold_past_links", HOST + "[dashboard]\nfold_past_links = 2.5\n"),
        ("[dashboard]: unknown field 'fold_past'", HOST + "[dashboard]\nfold_past = 2\n"),
    ],
)
def test_a_bad_number_is_one_line_naming_file_and_field(
    tmp_path: Path, field: str, toml: str
) -> None:
    p = tmp_path / "fabtop.toml"
    p.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    (line,) = str(e.value).splitlines()
    assert line.startswith(f"{p}: "), line
    assert field in line, line


def test_unicode_digits_in_firewall_ports_are_a_config_error_not_an_internal_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "fabtop.toml"
    p.write_text(HOST + '[firewall]\nports = ["²"]\n', encoding="utf-8")
    assert main(["snapshot", "-c", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fabtop: {p}: [firewall] ports must be "), err
    assert "internal error" not in err


def test_good_numbers_still_load(tmp_path: Path) -> None:
    p = tmp_path / "fabtop.toml"
    p.write_text(
        "interval = 0.1\n[thresholds]\ndetect_s = 0\nstorm_pause_ratio = 1\nnic_temp_warn_c = 80\n"
        '[firewall]\nports = [1, " 65535 ", "32768-60999"]\n'
        "[dashboard]\nfold_past_links = 0\n"
        '[[host]]\nname = "n1"\nssh = "admin@n1:2222"\n'
        'inference = ["http://[::1]:8000/metrics", "http://127.0.0.1/metrics"]\n'
    )
    cfg = load_config(p)
    assert cfg.interval == 0.1
    assert cfg.thresholds == {"detect_s": 0.0, "storm_pause_ratio": 1.0, "nic_temp_warn_c": 80.0}
    assert cfg.firewall_ports == ((1, 1), (65535, 65535), (32768, 60999))
    assert cfg.hosts[0].ssh is not None and cfg.hosts[0].ssh.port == 2222
    assert cfg.fold_past_links == 0  # groups start folded whatever the fabric's size


def test_every_threshold_has_a_range_holding_its_default() -> None:
    for name, default in DEFAULT_THRESHOLDS.items():
        lo, hi = threshold_range(name)
        assert lo <= default <= hi, name
