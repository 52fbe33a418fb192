"""One host in full: status, target, the whole error, warnings, each probe section, gaps.

The hosts table cuts an error to one line; here every word of it is wrapped, beside the
probe's own warnings and the status of each section it read (so "no nvidia-smi" or "DCB
not supported" is on screen, not only in the snapshot JSON). Enter on a host row or
``i`` opens it; ``l`` shows the overview with this host's links only.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from collectors.samples import HostSample, VersionRead
from collectors.text import clean, clean_lines
from fabtop.core.coverage import host_gaps
from fabtop.core.rules.firewall import firewall_lines
from fabtop.core.state import FabricState, HostState, effective_status
from fabtop.core.thunderbolt import PAIRED, cables_of, domain_line, pair_cables
from tui import format as fmt
from tui.context import ViewContext
from tui.messages import HostLinksChosen
from tui.rows.links import summary
from tui.screens.base import DataScreen
from tui.widgets.exo_cluster import cluster_parts
from tui.widgets.findings_panel import badge
from tui.widgets.host_table import STATUS_CELL
from tui.widgets.quiet_static import QuietStatic
from tui.widgets.top_bar import TopBar

SECTION_STYLE = {"ok": "green", "missing": "yellow", "timeout": "bold red", "error": "bold red"}


def _kv() -> Table:
    t = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
    t.add_column(no_wrap=True, style="bold")
    t.add_column(overflow="fold")
    return t


def _count(n: int, what: str) -> str:
    return f"no {what}" if n == 0 else f"1 {what}" if n == 1 else f"{n} {what}s"


def _heading(title: str) -> list[RenderableType]:
    return [Text(""), Text(title, "bold underline")]


def _probe_line(impl: str | None) -> str:
    """Which probe the node runs: ``python 3.11.2 /usr/bin/python3`` or ``sh``."""
    if impl is None:
        return "not said (a recording or source older than the fast probe)"
    if impl == "sim":
        return "simulated (the demo stands in for the fast probe, PFC watchdog included)"
    if impl == "sh":
        return 'sh (no python3 of 3.6 or newer, or probe = "sh"): forks per tick, no watchdog'
    if impl == "sim-darwin":
        return "simulated macOS probe (the demo's Macs)"
    if impl.startswith("zsh-darwin"):
        return (
            f"macOS (zsh {impl.partition(' ')[2]}): netstat per tick, slow tools off the "
            "tick path; verified on public captures only, not run on a real Mac"
        )
    kind, _, rest = impl.partition(" ")
    version, _, exe = rest.partition(" ")
    return f"fast ({kind} {version}{f' at {exe}' if exe else ''}): no fork per tick, PFC watchdog"


# A host's software (issue 15), in the order people check it.
_VERSION_ROWS = (
    ("kernel", "kernel"),
    ("rdma-core", "rdma_core"),
    ("OFED", "ofed"),
    ("NVIDIA driver", "nvidia_driver"),
    ("NCCL (loaded)", "nccl"),
)


def _version_text(read: VersionRead | None) -> Text:
    """A version with where it came from; unknown in yellow with why (never blank)."""
    if read is None:
        return Text("not read", "dim")
    if read.value is None:
        return Text(f"unknown ({clean(read.note or 'no reason given')})", "yellow")
    t = Text(clean(read.value))
    t.append(f"  {clean(read.source)}" + (f"; {clean(read.note)}" if read.note else ""), "dim")
    return t


def _nic_versions(s: HostSample) -> list[tuple[str, str]]:
    """``(driver and firmware, its ports)`` of the host's NICs, one row per distinct pair."""
    by: dict[str, list[str]] = {}
    for link in s.links.values():
        if not (link.physical or link.rdma_device) or not (link.driver or link.firmware):
            continue
        what = " ".join(x for x in (link.driver, link.driver_version) if x) or "driver ?"
        what += f", fw {link.firmware}" if link.firmware else ""
        by.setdefault(what, []).append(link.netdev or link.id)
    return [(what, ", ".join(ports)) for what, ports in by.items()]


def _versions(s: HostSample | None) -> list[RenderableType]:
    if s is None:
        return [Text("nothing read yet", "dim")]
    kv = _kv()
    v = s.versions
    for label, attr in _VERSION_ROWS:
        kv.add_row(Text(label), _version_text(getattr(v, attr) if v is not None else None))
    nics = _nic_versions(s)
    for what, ports in nics:
        row = Text(clean(what))
        row.append(f"  {clean(ports)}", "dim")
        kv.add_row(Text("NIC"), row)
    if not nics:
        kv.add_row(Text("NIC"), Text("no driver or firmware read", "dim"))
    return [kv]


def _macos_line(s: HostSample) -> str:
    """Which thermal source a Mac uses, its RDMA switch and devices, its bridges."""
    m = s.macos
    assert m is not None
    thermal = {
        "macmon": "thermals and GPU from macmon",
        "pmset": f"thermal pressure from pmset ({m.thermal_pressure or 'unknown'})",
    }.get(m.thermal_source or "", "thermals not read (no macmon; pmset -g therm gave nothing)")
    devs = "unknown" if m.rdma_devices is None else f"{len(m.rdma_devices)} RDMA devices"
    bridges = "; ".join(f"{b}: {', '.join(ms)}" for b, ms in m.bridges.items()) or "none"
    out = f"{thermal} · rdma_ctl {m.rdma_ctl or 'unknown'}, {devs} · bridge members {bridges}"
    if m.unverified:
        out += " · unverified: " + "; ".join(m.unverified)
    return clean(out)


def host_detail(state: FabricState, hs: HostState, now: float, interval: float) -> RenderableType:
    """Everything fabtop knows about one host, wrapped to the width."""
    status = effective_status(hs, now, state.interval)
    label, style = STATUS_CELL.get(status, (status, ""))
    head = Text()
    head.append(f" {hs.name} ", "bold reverse")
    head.append("  ")
    head.append(label, style)
    parts: list[RenderableType] = [head]
    kv = _kv()
    kv.add_row(Text("target"), Text(clean(hs.target)))
    last = (
        f"last frame {fmt.age(hs.age_s(now))} ago"
        if hs.last_frame_mono is not None
        else "no frame yet"
    )
    kv.add_row(
        Text("status"),
        Text(f"{status} · {last} · rtt {fmt.ms(hs.rtt_s)} · {hs.frames:,} frames used"),
    )
    s = hs.sample
    if s is not None:
        kv.add_row(
            Text("seen"),
            Text(
                ", ".join(
                    _count(n, what)
                    for n, what in (
                        (len(s.links), "link"),
                        (len(s.gpus), "GPU"),
                        (len(s.inference), "inference server"),
                    )
                )
            ),
        )
        kv.add_row(Text("probe"), Text(_probe_line(s.probe)))
        if s.macos is not None:
            kv.add_row(Text("macOS"), Text(_macos_line(s)))
    parts.append(kv)
    parts += _heading("Software")
    parts += _versions(s)
    parts += _heading("Error")
    parts.append(Text(clean_lines(hs.error), "red") if hs.error else Text("none", "dim"))
    found = [
        f
        for f in state.findings
        if f.host == hs.name or (f.port is not None and f.port.host == hs.name)
    ]
    parts += _heading("Findings on this host")
    if not found:
        parts.append(Text("none", "dim"))
    for f in found:
        line = Text()
        label, bstyle = badge(f.severity)
        line.append(label, bstyle)
        line.append(" ")
        line.append(clean_lines(f.summary))
        parts.append(line)
    if s is not None and s.thunderbolt is not None:
        parts += _heading("Thunderbolt")
        parts.append(Text(clean(domain_line(s.thunderbolt), 400)))
        for c in cables_of(pair_cables({n: h.sample for n, h in state.hosts.items()}), hs.name):
            parts.append(Text("  " + clean(c.text, 400), "" if c.status == PAIRED else "yellow"))
    for inf in s.inference if s is not None else []:
        if inf.cluster is not None:  # exo: its nodes and where each model's runners sit
            parts += _heading(f"exo cluster at {clean(inf.url)}")
            parts += cluster_parts(inf)
    missing = host_gaps(hs) if status == "up" else ()
    parts += _heading("Not monitored on this host")
    parts.extend(Text(clean(g), "yellow") for g in missing)
    if not missing:
        parts.append(
            Text(
                "every source fabtop knows was found" if s is not None else "nothing read yet",
                "dim",
            )
        )
    if s is not None and s.firewall is not None:
        parts += _heading("Firewall")
        for ln in firewall_lines(s, state.firewall_ports):
            parts.append(
                Text(clean(ln, 400), "yellow" if "unknown" in ln or "dropped" in ln else "")
            )
    parts += _heading("Not read on this host")
    if not hs.unread:
        parts.append(
            Text(
                "every section was read in its last frame" if s is not None else "nothing read yet",
                "dim",
            )
        )
    else:
        gaps = _kv()
        for kind, why in sorted(hs.unread.items()):
            gaps.add_row(Text(clean(kind), "yellow"), Text(clean_lines(why)))
        parts.append(gaps)
    warnings = [*hs.warnings, *(w for w in (s.warnings if s else []) if w not in hs.warnings)]
    parts += _heading(f"Warnings ({len(warnings)}, newest last)")
    if not warnings:
        parts.append(Text("none", "dim"))
    for w in warnings:
        line = Text("• ")
        line.append(clean_lines(w))
        parts.append(line)
    parts += _heading("Probe sections (last frame)")
    if s is None or not s.sections:
        parts.append(Text("none reported", "dim"))
    else:
        sec = Table(
            box=None, show_header=True, header_style="bold", padding=(0, 2, 0, 0), expand=False
        )
        sec.add_column("section", no_wrap=True)
        sec.add_column("subject", overflow="fold")
        sec.add_column("status", no_wrap=True)
        sec.add_column("detail", overflow="fold")
        for st in s.sections:
            sec.add_row(
                Text(clean(st.kind)),
                Text(clean(st.subject or "")),
                Text(clean(st.status), SECTION_STYLE.get(st.status, "")),
                Text(clean_lines(st.detail or "")),
            )
        parts.append(sec)
    return Group(*parts)


class HostDetailScreen(DataScreen):
    """A host's detail; Esc goes back, ``l`` lists its links on the overview."""

    DEFAULT_CSS = """
    HostDetailScreen #host-body { height: 1fr; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("l", "links", "its links"),
    ]

    def __init__(self, ctx: ViewContext, host: str) -> None:
        super().__init__(ctx, name="host")
        self.host = host
        self._sig: object = None

    def compose(self) -> ComposeResult:
        yield TopBar(id="top")
        with VerticalScroll(id="host-body"):
            yield QuietStatic(id="host-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#host-body", VerticalScroll).focus()
        self.refresh_view()

    def refresh_view(self) -> None:
        """Redraw from the state (only when something shown changed)."""
        super().refresh_view()
        ctx = self.ctx
        state, now = ctx.state, ctx.now()
        self.query_one(TopBar).show(summary(state, now, ctx.interval), ctx.paused, None)
        hs = state.hosts.get(self.host)
        if hs is None:
            self.query_one("#host-text", Static).update(
                Text(f"{self.host}: no longer watched", "dim")
            )
            return
        age = hs.age_s(now)
        sig = (
            effective_status(hs, now, state.interval),
            hs.error,
            hs.frames,
            hs.rtt_s,
            tuple(hs.warnings),
            tuple(sorted(hs.unread.items())),
            None if age is None else round(age, 1),
            tuple((f.severity, f.summary) for f in state.findings),
        )
        if sig != self._sig:
            self._sig = sig
            self.query_one("#host-text", Static).update(host_detail(state, hs, now, ctx.interval))

    def show_flags(self) -> None:
        """Redraw the PAUSED marker."""
        self.query_one(TopBar).show(None, self.ctx.paused, None)

    def action_back(self) -> None:
        """Back to where it was opened."""
        self.dismiss()

    def action_links(self) -> None:
        """The overview with this host's links only (Esc there shows all again)."""
        self.app.post_message(HostLinksChosen(self.host))
