"""The link detail's cable panel (issue 33): optics per lane with the margin to the
module's own alarm, FEC mode, the pre-FEC BER and its trend; both ends of a ``[[cable]]``
side by side, so "which end is bad" is one look.

The BER is what the cable rules measure (their windows, fabtop.core.ber): the panel shows
the figure a finding would be raised on, never a second computation of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from collectors.optics import SIGNAL_TEXT, TEMPERATURE_C
from collectors.samples import LinkSample
from collectors.text import clean
from fabtop.core.ber import BY_RATE_TIME, BY_RX_BITS, FROM_BLOCKS, FROM_MLXLINK, ber_text, rise
from fabtop.core.cables import Cable, CableEnd, far_end
from fabtop.core.findings import port_ref
from fabtop.core.rules import link_ber
from fabtop.core.rules.cable import cable_events, event_what, rx_margins
from fabtop.core.state import FabricState
from fabtop.core.units import age, duration

# The BER's denominator, short (fabtop.core.ber says each in full)
_PER = {BY_RX_BITS: "bits rx", BY_RATE_TIME: "rate x time"}


def find_link(state: FabricState, host: str, port: str) -> tuple[str, LinkSample] | None:
    """The link of ``host`` the operator names ``port`` (netdev, or RDMA device/port)."""
    hs = state.hosts.get(host)
    if hs is None or hs.sample is None:
        return None
    for lid, link in hs.sample.links.items():
        if port_ref(host, link).name == port:
            return lid, link
    return None


def cable_panel(state: FabricState, host: str, lid: str, cables: Sequence[Cable]) -> Text | None:
    """Both ends' lines, this end first (None: nothing to show of this link's cable)."""
    hs = state.hosts.get(host)
    link = hs.sample.links.get(lid) if hs and hs.sample else None
    if link is None:
        return None
    far = far_end(cables, host, port_ref(host, link).name)
    mine = _end(state, host, lid, link, "this end")
    if mine is None and far is None:
        return None
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append_text(mine or Text(f" this end {port_ref(host, link).label}: no optics, FEC or BER"))
    if far is not None:
        out.append("\n")
        out.append_text(_far(state, far))
    return out


def _far(state: FabricState, end: CableEnd) -> Text:
    if end.port is None:
        return Text(f" far end  {end.label}: not a fabtop host ([[cable]] in the config)", "dim")
    found = find_link(state, end.host, end.port)
    if found is None:
        return Text(f" far end  {end.label}: not reported", "yellow")
    lid, link = found
    got = _end(state, end.host, lid, link, "far end ")
    return got or Text(f" far end  {end.label}: no optics, FEC or BER")


def _end(state: FabricState, host: str, lid: str, link: LinkSample, which: str) -> Text | None:
    mod, fec, ber = link.module, link.fec, link_ber(state, host, lid)
    events = cable_events(state.finding_log.episodes(), f"{host}/{lid}")
    if mod is None and fec is None and ber is None and not events:
        return None
    margin = state.thresholds["optic_rx_margin_db"]
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f" {which} ", "bold")
    t.append(port_ref(host, link).label)
    if mod is not None:
        what = " ".join(x for x in (mod.identifier, mod.vendor, mod.part) if x)
        if what:
            t.append(f"  {clean(what, 60)}", "dim")
        if mod.temperature_c is not None:
            lim = mod.limits.get(TEMPERATURE_C)
            warn = None if lim is None else lim.high_warning
            hot = (
                warn is not None
                and mod.temperature_c >= warn - state.thresholds["module_temp_margin_c"]
            )
            t.append(f"  {mod.temperature_c:.0f} °C", "bold red" if hot else "")
            if warn is not None:
                t.append(f" (warn {warn:.0f})", "dim")
    if fec is not None:
        t.append(f"  FEC {clean(fec.active or '?', 16)}")
    if ber is not None:
        t.append("  pre-FEC BER ")
        lower = "≥" if ber.counted_from == FROM_BLOCKS else ""
        t.append(lower + ber_text(ber.ber), "bold")
        t.append(f" ÷ {_PER[ber.denominator]}", "dim")  # what the bits corrected are over
        if ber.counted_from == FROM_MLXLINK:
            t.append(" (mlxlink)", "dim")  # the bits corrected as mlxlink counts them
        moved = rise(ber)
        if moved is not None:  # from its baseline, as it happened
            over = "" if moved[1] is None else f" in {duration(moved[1])}"
            t.append(f" {moved[0]:+.1f} dec{over}", "bold red" if moved[0] >= 1 else "dim")
    if mod is not None and any(ln.rx_power_mw is not None for ln in mod.lanes):
        t.append("\n   rx dBm", "dim")
        kind = " OMA" if mod.rx_power_kind == "oma" else ""
        if kind:
            t.append(kind, "dim")
        for lane, p, above in rx_margins(mod):
            t.append(f"  {lane}: ")
            if p is None:
                t.append("?", "dim")
            elif p == float("-inf"):
                t.append("dark", "dim")  # unused, or the port is down: not judged
            else:
                style = "bold red" if above is not None and above <= margin else ""
                t.append(f"{p:.1f}", style)
                if above is not None:
                    t.append(f" (+{above:.1f} dB)", style or "dim")
        if all(above is None for _, _, above in rx_margins(mod)):
            t.append("  (the module gives no alarm limit)", "dim")
    flagged = [ln for ln in mod.lanes if ln.signals] if mod is not None else []
    if flagged:
        # Latched by the module since its previous read (collectors.optics.SIGNALS).
        t.append("\n   flags ", "dim")
        for ln in flagged:
            t.append(f"  {ln.lane}: " + ", ".join(SIGNAL_TEXT[s] for s in ln.signals), "yellow")
    if events:
        # The NIC's health reporters and lost signals, as the timeline marks them.
        now = state.data_now()
        t.append("\n   events", "dim")
        for ep in events:
            style = "yellow" if ep.cleared is None else ""
            t.append(f"  {age(max(0.0, now - ep.raised))} ago ", "dim")
            t.append(clean(event_what(ep), 80), style)
    return t
