"""The filter language (`/` and --filter): terms, fields, inversion, bad input in one line."""

from __future__ import annotations

import pytest

from fabtop.run.link_filter import MAX_TEXT, FilterError, LinkFacts, parse

STORM = LinkFacts(
    "node3", "enp65s0f0np0", "roce", "Ethernet", "up", "up", 0, frozenset({"pfc_storm"}), "critical"
)
CALM = LinkFacts("node12", "enp65s0f1np1", "roce", "Ethernet", "up", "up", 1)
IB = LinkFacts("node1", "mlx5_2/1", "ib", "InfiniBand", "down", "stale", None)


def shown(text: str) -> list[str]:
    flt = parse(text)
    return [f"{f.host}/{f.link}" for f in (STORM, CALM, IB) if flt.holds(f)]


def test_free_text_fields_and_inversion_all_must_hold() -> None:
    assert shown("") == ["node3/enp65s0f0np0", "node12/enp65s0f1np1", "node1/mlx5_2/1"]
    assert shown("f1np1") == ["node12/enp65s0f1np1"]
    assert shown("host:node1[0-9]") == ["node12/enp65s0f1np1"]
    assert shown("host:node[1-3]") == ["node3/enp65s0f0np0", "node1/mlx5_2/1"]
    assert shown("rail:1") == ["node12/enp65s0f1np1"]
    assert shown("kind:ib") == ["node1/mlx5_2/1"]
    assert shown("!kind:roce") == ["node1/mlx5_2/1"]
    assert shown("state:down") == ["node1/mlx5_2/1"]  # the link's state
    assert shown("state:stale") == ["node1/mlx5_2/1"]  # or its host's
    assert shown("rule:pfc_storm") == ["node3/enp65s0f0np0"]
    assert shown("sev:warning") == ["node3/enp65s0f0np0"]  # at least that severity
    assert shown("kind:roce !rule:pfc_storm") == ["node12/enp65s0f1np1"]
    assert shown("KIND:RoCE   host:node3") == ["node3/enp65s0f0np0"]
    assert parse("  kind:roce   !node3 ").text == "kind:roce !node3"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("bogus:1", "unknown field 'bogus' in 'bogus:1'"),
        ("host:", "'host:' has no value"),
        ("!", "'!' inverts nothing"),
        ("rail:x", "rail must be a number in 'rail:x'"),
        ("kind:fddi", "kind must be one of roce, ib, tb, netdev, virtual in 'kind:fddi'"),
        ("sev:fatal", "sev must be one of info, warning, critical"),
        ("host:node[", "bad hostlist expression 'node['"),
        ("host:n[1-99999999]", "host:n[1-99999999]"),
        ("a\x1b[31mb", "control character"),
        ("x" * (MAX_TEXT + 1), f"longer than {MAX_TEXT}"),
    ],
)
def test_a_bad_filter_is_one_line_naming_the_term(text: str, says: str) -> None:
    with pytest.raises(FilterError) as e:
        parse(text)
    assert says in str(e.value) and "\n" not in str(e.value)
