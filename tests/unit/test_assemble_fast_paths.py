"""The per-tick shortcuts of a kept shape (collectors/assemble.py) give what the long way
gives: saturation read from the values by position, all links' metrics made in one try."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import collectors.layout as lay
from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.samples import LinkSample
from collectors.values import values_line
from tests.unit.test_assemble_shape import _fresh, _stream


def _set(frame: Frame, kind: str, values: dict[str, str]) -> Frame:
    """``frame`` with the values of these names (in its ``kind`` sections) replaced."""
    secs = []
    for s in frame.sections:
        if s.kind == kind and s.schema is not None:
            # whole values, also where the stream sent a delta
            whole = s.text if s.values is None else values_line(s.values.vals or [], 10**9)
            toks = whole.split(" ")
            for i, name in enumerate(s.schema.names):
                if name in values:
                    toks[i] = values[name]
            s = Section(s.kind, s.subject, s.read_ns, s.status, s.detail, " ".join(toks), s.schema)
        secs.append(s)
    return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, secs)


_STUCK = {  # legacy PMA counters at their maximum (16 and 32 bits)
    "mlx5_2/ports/1/counters/symbol_error": str(2**16 - 1),
    "mlx5_0/ports/1/counters/port_rcv_data": str(2**32 - 1),
}


def test_saturation_on_a_kept_shape_is_what_a_new_build_gives() -> None:
    stuck_ticks = {6, 7, 8, 12}
    seen = set()
    for n, f in enumerate(_stream(16)):
        g = _set(f, "sysib_counters", _STUCK) if n in stuck_ticks else f
        got = assemble("n4", g)
        assert repr(got) == _fresh("n4", g), n
        sat = {lid: link.saturated for lid, link in got.links.items() if link.saturated}
        if n in stuck_ticks:
            assert sat == {"mlx5_2/1": ["symbol_error"], "enp65s0f0np0": ["port_rcv_data"]}
            seen.add(n)
        else:
            assert sat == {}, n
    assert seen == stuck_ticks


def _failing_on(
    link_id: str, real: Callable[[LinkSample, lay.LinkPlan, list[str]], None]
) -> Callable[[LinkSample, lay.LinkPlan, list[str]], None]:
    def metrics(link: LinkSample, lp: lay.LinkPlan, left: list[str]) -> None:
        if link.id == link_id:
            raise ValueError("broken on purpose")
        real(link, lp, left)

    return metrics


@pytest.mark.parametrize("link_id", ["enp65s0f0np0", "mlx5_2/1", "lo"])
def test_a_link_whose_metrics_fail_is_said_at_its_place(
    link_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One try for all links' metrics, then each link behind its own guard on a failure:
    the same sample, warning lines in the same places, as a guard per link every tick."""
    frames = _stream(6)
    for f in frames[:3]:
        assemble("n5", f)
    monkeypatch.setattr(lay, "_metrics", _failing_on(link_id, lay._metrics))
    at_once = assemble("n5", frames[3])
    kept = lay._SHAPES["n5"].shape
    assert kept.metrics_at_once
    monkeypatch.setattr(kept, "metrics_at_once", False)  # the guard per link
    each = assemble("n5", frames[3])
    assert repr(at_once) == repr(each)
    assert f"n5: link {link_id}: error: ValueError: broken on purpose" in at_once.warnings
    assert at_once.links[link_id].metrics == {}
    assert all(link.metrics for lid, link in at_once.links.items() if lid != link_id)
