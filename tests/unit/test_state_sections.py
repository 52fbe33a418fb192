"""What a host's state remembers of the sections its probe could not read."""

from __future__ import annotations

from collectors.samples import HostSample, SectionStatus
from fabtop.core import state as state_mod
from fabtop.core.state import HostState


def _sample(*sections: SectionStatus) -> HostSample:
    return HostSample("n1", 1, 1, 1.0, sections=list(sections))


def test_a_section_read_again_is_forgotten_and_notes_stay_bounded() -> None:
    hs = HostState("n1", "n1")
    hs.note_sections(_sample(SectionStatus("gpu", None, "ok"), SectionStatus("dcb", None, "error",
                                                                             detail="rc=1")))
    assert hs.unread == {"dcb": "error (rc=1)"}
    hs.note_sections(_sample(SectionStatus("gpu", None, "missing", detail="no nvidia-smi")))
    assert hs.unread == {"dcb": "error (rc=1)", "gpu": "missing (no nvidia-smi)"}
    hs.note_sections(_sample(SectionStatus("dcb", None, "ok"), SectionStatus("x", None, "ok")))
    assert hs.unread == {"gpu": "missing (no nvidia-smi)"}
    many = [SectionStatus(f"k{i}", None, "timeout") for i in range(state_mod.MAX_SECTION_NOTES)]
    hs.note_sections(_sample(*many))
    assert len(hs.unread) == state_mod.MAX_SECTION_NOTES and "k63" not in hs.unread
    hs.note_sections(_sample(SectionStatus("gpu", None, "ok")))
    assert "gpu" not in hs.unread and len(hs.unread) == state_mod.MAX_SECTION_NOTES - 1
