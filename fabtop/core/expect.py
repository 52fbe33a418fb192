"""What the fabric must have (``[expect]``) and what a host lacks: the launch gate.

A config's ``[expect]`` table (all hosts) and a host's ``[host.expect]`` (its overrides)
declare what each node must have before a job may start: how many RDMA ports, their link
layer, speed, width and MTU, the lossless priority, how many GPUs, an inference server.
:func:`check` compares one host's latest state with its expectation and returns what is
not met, each with what was expected and what was found; ``doctor`` turns them into
findings and ``fabtop test`` reads the same list. Blind is never healthy (DESIGN §10): a
host not read, or a field that could not be read, comes back *unchecked*, never met.

The fields, their ranges and meaning live in :data:`FIELDS`, once: the config reads
them, the docs list them, ``--write-expect`` writes them.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from collectors.gpu_sections import GPU_KINDS
from collectors.samples import HostSample, LinkSample
from fabtop.core.findings import Finding, PortRef, port_ref, prio_text
from fabtop.core.rules.context import is_rdma_ethernet, link_down, lossless_prios
from fabtop.core.state import NOT_REPORTING, FabricState, HostState, effective_status, ssh_command

LINK_LAYERS = ("InfiniBand", "Ethernet")
UNMET = "unmet"
UNCHECKED = "unchecked"
# Rules of the findings doctor makes of them: an unmet expectation fails the gate (exit 2);
# one that could not be checked is not a pass either (exit 1).
RULE_UNMET = "expect_unmet"
RULE_UNCHECKED = "expect_unchecked"


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One ``[expect]`` field: its range (numbers), and what it declares (docs, errors)."""

    name: str
    lo: float
    hi: float
    whole: bool
    means: str


# Numbers: (lo, hi) bound what a config may say; ``link_layer`` and ``inference`` are
# checked by kind (a name of LINK_LAYERS, a bool).
FIELDS = (
    FieldSpec("rdma_ports", 0, 64, True, "how many RDMA ports (InfiniBand or RoCE) the host has"),
    FieldSpec("link_layer", 0, 0, False, "every RDMA port's link layer: InfiniBand or Ethernet"),
    FieldSpec("speed_gbps", 1, 3200, False, "every RDMA port's negotiated speed, Gb/s"),
    FieldSpec("width", 1, 32, True, "every RDMA port's lanes (the 4 of '4X NDR')"),
    FieldSpec("mtu", 68, 65536, True, "every RDMA port's netdev MTU"),
    FieldSpec("lossless_priority", 0, 7, True, "PFC enabled on this priority on every RoCE port"),
    FieldSpec("gpus", 0, 1024, True, "how many GPUs the GPU tool lists"),
    FieldSpec("inference", 0, 0, False, "true: an inference server answers on the host"),
    FieldSpec(
        "ip_speed_mbps",
        1,
        10_000_000,
        False,
        "an IP path's speed, Mb/s: what `fabtop test` judges IP paths against "
        "(doctor measures no path)",
    ),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)
# Fields every RDMA port is checked against.
PORT_FIELDS = ("link_layer", "speed_gbps", "width", "mtu", "lossless_priority")


@dataclass(frozen=True, slots=True)
class Expect:
    """One host's expectation; None: not declared, not checked."""

    rdma_ports: int | None = None
    link_layer: str | None = None  # one of LINK_LAYERS
    speed_gbps: float | None = None
    width: int | None = None
    mtu: int | None = None
    lossless_priority: int | None = None
    gpus: int | None = None
    inference: bool | None = None  # True: a server must answer; False: not required
    ip_speed_mbps: float | None = None

    def over(self, base: Expect) -> Expect:
        """This expectation's declared fields over ``base``'s (a host's over ``[expect]``)."""
        mine = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(base, **{k: v for k, v in mine.items() if v is not None})

    def declared(self) -> dict[str, int | float | str | bool]:
        """The declared fields by name, in FIELDS order."""
        out: dict[str, int | float | str | bool] = {}
        for name in FIELD_NAMES:
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        return out


Found = int | float | str | bool | None


@dataclass(frozen=True, slots=True)
class Unmet:
    """One expectation a host does not meet (``status`` UNMET) or that could not be read
    (UNCHECKED: ``found`` None, ``why`` says what was not read)."""

    host: str
    field: str
    expected: int | float | str | bool
    found: Found
    status: str = UNMET
    port: PortRef | None = None
    why: str = ""

    @property
    def found_text(self) -> str:
        """What was found, as a person reads it."""
        if self.status == UNCHECKED:
            return f"not read ({self.why})" if self.why else "not read"
        return _text(self.found)

    @property
    def line(self) -> str:
        """``node3/mlx5_0/1: speed_gbps expected 400, found 200``."""
        who = self.port.label if self.port is not None else self.host
        if self.status == UNCHECKED:
            return f"{who}: {self.field} expected {_text(self.expected)}, could not check: " + (
                self.why or "not read"
            )
        return f"{who}: {self.field} expected {_text(self.expected)}, found {self.found_text}"


def _text(v: Found) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "?" if v is None else str(v)


def is_rdma_port(link: LinkSample) -> bool:
    """An RDMA port (InfiniBand or RoCE): what ``rdma_ports`` counts, and what doctor's
    "no RDMA device on ..." means."""
    return bool(link.rdma_device) or link.kind in ("ib", "roce")


def rdma_ports(sample: HostSample) -> list[LinkSample]:
    """The host's RDMA ports (:func:`is_rdma_port`), by link id."""
    return sorted(filter(is_rdma_port, sample.links.values()), key=lambda ln: ln.id)


def gpu_count(hs: HostState, sample: HostSample) -> tuple[int | None, str]:
    """GPUs the GPU tool lists, or (None, why not read).

    No GPU tool at all on the node is 0 GPUs: a node meant to have GPUs whose driver
    stack is not installed fails its gate. A tool that failed, or no GPU section, is
    unread.
    """
    if sample.gpus or any(s.kind in GPU_KINDS and s.status == "ok" for s in sample.sections):
        return len(sample.gpus), ""
    notes = [hs.unread[k] for k in GPU_KINDS if k in hs.unread]
    if notes and all(n.startswith("missing") for n in notes):
        return 0, ""
    return None, "; ".join(f"{k} {hs.unread[k]}" for k in GPU_KINDS if k in hs.unread) or (
        "no GPU tool answered"
    )


def port_values(link: LinkSample) -> dict[str, Found]:
    """What one RDMA port has of the per-port fields (None: not read)."""
    prios = lossless_prios(link)
    layer = link.link_layer or ("InfiniBand" if link.kind == "ib" else None)
    return {
        "link_layer": _layer(layer),
        "speed_gbps": link.rate_gbps,
        "width": link.width,
        "mtu": link.mtu,
        # the lowest PFC priority (write-expect); check() tests membership
        "lossless_priority": (min(prios) if prios else None) if is_rdma_ethernet(link) else None,
    }


def _layer(text: str | None) -> str | None:
    """The link layer in LINK_LAYERS' spelling, whatever case the source used."""
    if text is None:
        return None
    return next((n for n in LINK_LAYERS if n.lower() == text.lower()), text)


def check(hs: HostState, expect: Expect, status: str | None = None) -> list[Unmet]:
    """What ``hs`` (its latest sample) lacks of ``expect``: unmet and unchecked fields.

    Empty when everything declared is met. A host with no usable sample (down, failing,
    stale, never read) gives one UNCHECKED entry, field ``host``. ``status``: the host's
    effective one (stale when silent, :func:`fabtop.core.state.effective_status`);
    default its last reported one.
    """
    status = hs.status if status is None else status
    want = expect.declared()
    want.pop("ip_speed_mbps", None)  # a path's speed: measured by `fabtop test` only
    if not want:
        return []
    sample = hs.sample
    if sample is None or status in NOT_REPORTING:
        why = hs.error or status
        return [Unmet(hs.name, "host", "read", None, UNCHECKED, why=f"host {why}")]
    out: list[Unmet] = []
    ports = rdma_ports(sample)
    if "rdma_ports" in want and len(ports) != want["rdma_ports"]:
        out.append(Unmet(hs.name, "rdma_ports", want["rdma_ports"], len(ports)))
    per_port = {k: v for k, v in want.items() if k in PORT_FIELDS}
    if per_port and not ports and "rdma_ports" not in want:
        # The fields speak of RDMA ports; with none, that is the one thing to say.
        out.append(Unmet(hs.name, "rdma_ports", "at least 1", 0))
    for link in ports:
        out += _check_port(hs.name, link, per_port)
    if "gpus" in want:
        n, why = gpu_count(hs, sample)
        if n is None:
            out.append(Unmet(hs.name, "gpus", want["gpus"], None, UNCHECKED, why=why))
        elif n != want["gpus"]:
            out.append(Unmet(hs.name, "gpus", want["gpus"], n))
    if want.get("inference"):
        answering = [i for i in sample.inference if i.error is None]
        if not answering:
            errors = [i.error for i in sample.inference if i.error]
            found = f"none answering ({errors[0]})" if errors else "none found"
            out.append(Unmet(hs.name, "inference", True, found))
    return out


def check_fabric(state: FabricState, expects: Mapping[str, Expect | None]) -> list[Unmet]:
    """:func:`check` of every host of ``expects`` (host name -> its expectation, None:
    none) that the state holds, in that order: what doctor and ``fabtop test`` gate on."""
    out: list[Unmet] = []
    now = state.now()
    for name, want in expects.items():
        hs = state.hosts.get(name)
        if want is not None and hs is not None:
            # A host gone silent is stale: its old sample meets nothing (blind is not healthy).
            out += check(hs, want, effective_status(hs, now, state.interval))
    return out


def _check_port(
    host: str, link: LinkSample, want: dict[str, int | float | str | bool]
) -> list[Unmet]:
    ref = port_ref(host, link)
    have = port_values(link)
    out: list[Unmet] = []
    for name, expected in want.items():
        if name == "lossless_priority":
            if not is_rdma_ethernet(link):
                continue  # InfiniBand has no PFC: its link layer is checked on its own
            prios = lossless_prios(link)
            if prios is None:
                out.append(Unmet(host, name, expected, None, UNCHECKED, ref, "PFC config not read"))
            elif expected not in prios:
                out.append(Unmet(host, name, expected, f"PFC on {prio_text(prios)}", port=ref))
            continue
        found = have[name]
        if name in ("speed_gbps", "width") and link_down(link.state):
            # A port that is down has no speed to compare: that is the failure.
            out.append(Unmet(host, name, expected, f"link {link.state}", port=ref))
        elif found is None:
            out.append(
                Unmet(host, name, expected, None, UNCHECKED, ref, f"{link.id} {name} not read")
            )
        elif not _same(expected, found):
            out.append(Unmet(host, name, expected, found, port=ref))
    return out


def _same(expected: Found, found: Found) -> bool:
    if isinstance(expected, int | float) and isinstance(found, int | float):
        return math.isclose(float(expected), float(found), rel_tol=1e-6)
    return expected == found


# What to run on the node to see a field for oneself (the port's netdev or RDMA device
# goes in quoted: remote names are data).
_LOOK = {
    "rdma_ports": "rdma link show",
    "link_layer": "ibv_devinfo",
    "speed_gbps": "ibv_devinfo -v",
    "width": "ibv_devinfo -v",
    "mtu": "ip link show",
    "lossless_priority": "mlnx_qos -i",
    "gpus": "nvidia-smi -L",
    "inference": "ss -ltnp",
    "host": "true",
}


def finding(u: Unmet, target: str | None = None) -> Finding:
    """doctor's finding of one unmet (critical) or unchecked (warning) expectation.

    ``target``: the host's SSH target, for the next step's command (None: none given).
    """
    look = _LOOK.get(u.field, "true")
    if u.port is not None and u.field in ("mtu", "lossless_priority"):
        look += " " + shlex.quote(u.port.name.split("/")[0])
    evidence: dict[str, int | float | str | None] = {
        "field": u.field,
        "expected": _text(u.expected),
        "found": None if u.status == UNCHECKED else _text(u.found),
    }
    if u.why:
        evidence["why"] = u.why
    return Finding(
        RULE_UNMET if u.status == UNMET else RULE_UNCHECKED,
        "critical" if u.status == UNMET else "warning",
        u.port.label if u.port is not None else u.host,
        u.line,
        dict(evidence),
        next_step=ssh_command(target, look) if target else look,
        host=u.host,
        port=u.port,
    )
