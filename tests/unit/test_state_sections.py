"""What a host's state remembers of the sections its probe could not read."""

from __future__ import annotations

from collectors.samples import HostSample, SectionStatus
from fabtop.core import state as state_mod
from fabtop.core.state import HostState


def _sample(*sections: SectionStatus) -> HostSample:
    return HostSample("n1", 1, 1, 1.0, sections=list(sections))


def test_a_section_read_again_is_forgotten_and_notes_stay_bounded() -> None:
    hs = HostState("n1", "n1")
    hs.note_sections(
        _sample(
            SectionStatus("gpu", None, "ok"), SectionStatus("dcb", None, "error", detail="rc=1")
        )
    )
    assert hs.unread == {"dcb": "error (rc=1)"}
    hs.note_sections(_sample(SectionStatus("gpu", None, "missing", detail="no nvidia-smi")))
    assert hs.unread == {"dcb": "error (rc=1)", "gpu": "missing (no nvidia-smi)"}
    hs.note_sections(_sample(SectionStatus("dcb", None, "ok"), SectionStatus("x", None, "ok")))
    assert hs.unread == {"gpu": "missing (no nvidia-smi)"}
    many = [SectionStatus(f"k{i}", None, "timeout") for i in range(state_mod.MAX_SECTION_NOTES)]
    hs.note_sections(_sample(*many))
    # Bounded, and the newest notes are kept (the oldest forgotten, never a new one refused)
    assert len(hs.unread) == state_mod.MAX_SECTION_NOTES and "k63" in hs.unread
    assert "gpu" not in hs.unread
    hs.note_sections(_sample(SectionStatus("k63", None, "ok")))
    assert "k63" not in hs.unread and len(hs.unread) == state_mod.MAX_SECTION_NOTES - 1


def test_warnings_that_come_every_tick_are_kept_once_and_come_back_when_pushed_out() -> None:
    """A carried slow section's warning is in every sample: said once; pushed out of the
    host's recent warnings by newer ones, the next sample says it again."""
    from fabtop.config import HostConfig
    from fabtop.core.state import FabricState

    state = FabricState([HostConfig("n1")])
    state.evaluate_per_frame = False
    lines = ["n1: dcb_pfc eth0: error (rc=1)", "n1: dcb_ets eth0: error (rc=1)"]
    for seq in range(1, 4):
        state.apply_sample(
            "n1", HostSample("n1", seq, seq * 10**9, 1.0 + seq, warnings=list(lines))
        )
    hs = state.hosts["n1"]
    assert list(hs.warnings) == lines
    for i in range(60):
        state.warn("n1", f"n1: line {i}")
    assert lines[0] not in hs.warnings
    state.apply_sample("n1", HostSample("n1", 4, 4 * 10**9, 5.0, warnings=list(lines)))
    assert list(hs.warnings)[-2:] == lines
    state.apply_sample("n1", HostSample("n1", 5, 5 * 10**9, 6.0, warnings=[*lines, "n1: new"]))
    assert list(hs.warnings)[-3:] == [*lines, "n1: new"]
