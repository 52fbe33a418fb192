"""Metrics summed from parts: unknown when a part is lost, said when a sum cannot be held.

(issue 27, class 5: a value lost without a word)
"""

from __future__ import annotations

from collectors.assemble import assemble
from collectors.frames import FrameDecoder

HEAD = "@@fabtop-frame {seq} {seq}000000000 {seq}.00 {seq}.000\n"


def _sample(body: str, seq: int = 1):  # type: ignore[no-untyped-def]
    (frame,) = FrameDecoder().feed((HEAD.format(seq=seq) + body + f"@@end {seq}\n").encode())
    return assemble("n1", frame, {})


PORT = "mlx5_0/ports/1"
IB = (
    f"@@section sysib - 1 ok\n{PORT}/link_layer InfiniBand\n{PORT}/state 4: ACTIVE\n"
    f"{PORT}/counters/port_rcv_remote_physical_errors 3\n{PORT}/counters/port_xmit_data 10\n"
)


def test_a_part_the_probe_could_not_read_leaves_the_sum_unknown() -> None:
    s = _sample(IB + f"{PORT}/counters/symbol_error -\n")  # "-": listed, not read
    link = s.links["mlx5_0/1"]
    assert "symbol_error" not in link.counters["ib_port"]
    assert "rx_phy_errors" not in link.metrics
    assert link.metrics["tx_bytes"] == 40  # the rest of the port is read
    # ... and read, the sum is whole.
    s = _sample(IB + f"{PORT}/counters/symbol_error 4\n")
    assert s.links["mlx5_0/1"].metrics["rx_phy_errors"] == 7


def test_a_part_holding_no_number_is_named_and_leaves_the_sum_unknown() -> None:
    s = _sample(IB + f"{PORT}/counters/symbol_error 1e999\n")
    assert "rx_phy_errors" not in s.links["mlx5_0/1"].metrics
    assert any("symbol_error: bad value '1e999'" in w for w in s.warnings), s.warnings


def test_a_port_without_the_part_at_all_sums_what_it_has() -> None:
    """N/A (no PMA): the port has no such counter; that is no lost value."""
    s = _sample(IB + f"{PORT}/counters/symbol_error N/A (no PMA)\n")
    assert s.links["mlx5_0/1"].metrics["rx_phy_errors"] == 3


def test_a_sum_beyond_64_bits_is_left_out_and_said() -> None:
    big = 2**63  # port_xmit_data counts 4-octet words: x4 is beyond 64 bits
    s = _sample(IB.replace("port_xmit_data 10", f"port_xmit_data {big}"))
    assert "tx_bytes" not in s.links["mlx5_0/1"].metrics
    assert any("tx_bytes: sum beyond 64 bits, left out" in w for w in s.warnings), s.warnings
