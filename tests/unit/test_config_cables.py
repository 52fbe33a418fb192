"""``[[cable]]`` pairs (issue 33): both ends of a cable; one-line errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabtop.config import ConfigError, load_config
from fabtop.core.cables import CableEnd, far_end
from fabtop.run.record import RecordError, config_entry, config_from_entry

HOSTS = '[[host]]\nname = "node[1-2]"\n'


def load(tmp_path: Path, cables: str) -> Path:
    path = tmp_path / "fabtop.toml"
    # a top-level key goes before the first table
    path.write_text(HOSTS + cables if cables.startswith("[[") else cables + HOSTS)
    return path


def test_cables_between_two_hosts_and_to_a_switch(tmp_path: Path) -> None:
    cfg = load_config(
        load(
            tmp_path,
            '[[cable]]\na = "node1/enp65s0f0np0"\nb = "node2/enp65s0f0np0"\n'
            '[[cable]]\na = "node1/mlx5_1/1"\nb = "switch1"\n',
        )
    )
    assert far_end(cfg.cables, "node2", "enp65s0f0np0") == CableEnd("node1", "enp65s0f0np0")
    assert far_end(cfg.cables, "node1", "mlx5_1/1") == CableEnd("switch1", None)
    assert far_end(cfg.cables, "node1", "enp65s0f1np1") is None


@pytest.mark.parametrize(
    ("cables", "expect"),
    [
        (
            '[[cable]]\na = "node9/eth0"\nb = "switch1"\n',
            "cable #1: field 'a': unknown host 'node9'",
        ),
        ('[[cable]]\na = "node1"\nb = "switch1"\n', "field 'a': 'node1' is a fabtop host"),
        (
            '[[cable]]\na = "node1/eth0;id"\nb = "sw"\n',
            "cable #1: field 'a': interface name refused",
        ),
        ('[[cable]]\na = "node1/mlx5_0/x"\nb = "sw"\n', "field 'a': bad port 'mlx5_0/x'"),
        ('[[cable]]\na = "node1/eth0"\n', "cable #1: field 'b': want \"host/port\""),
        ('[[cable]]\na = "sw1"\nb = "sw2"\n', "neither end is a fabtop host's port"),
        ('[[cable]]\na = "node1/eth0"\nb = "node1/eth0"\n', "a and b are the same end"),
        ('[[cable]]\na = "node1/eth0"\nb = "sw"\nc = 1\n', "cable #1: unknown field 'c'"),
        (
            '[[cable]]\na = "node1/eth0"\nb = "sw"\n'
            '[[cable]]\na = "node2/eth0"\nb = "node1/eth0"\n',
            "cable #2: field 'b': port 'node1/eth0' is already in cable #1",
        ),
        ('cable = "node1/eth0"\n', "cable must be [[cable]] tables"),
    ],
)
def test_a_bad_cable_is_one_line_naming_file_cable_and_field(
    tmp_path: Path, cables: str, expect: str
) -> None:
    path = load(tmp_path, cables)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)) and expect in msg, msg


def test_a_recording_keeps_the_cables_and_checks_them_on_reading(tmp_path: Path) -> None:
    cfg = load_config(load(tmp_path, '[[cable]]\na = "node1/mlx5_0/1"\nb = "switch1"\n'))
    entry = config_entry(cfg)
    assert config_from_entry(entry).cables == cfg.cables
    entry["cable"] = [{"a": "node9/eth0", "b": "switch1"}]  # a host the recording lacks
    with pytest.raises(RecordError) as e:
        config_from_entry(entry, "r.fabrec")
    assert str(e.value).startswith("r.fabrec: field 'config': cable #1: field 'a': unknown host")
