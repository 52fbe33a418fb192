"""InfiniBand: a fabric without a subnet manager.

An InfiniBand port trains on its own (physical state LinkUp) but carries nothing until
a subnet manager (opensm, or a managed switch's SM) gives it a LID and moves it through
ARMED to ACTIVE; until then it sits in INIT with SM LID 0 ("Initializing: ... it hasn't
been discovered by the subnet manager ... make sure ... the 'opensm' process is running",
https://advancedclustering.com/act_kb/infiniband-port-states). RoCE ports report SM LID 0
by design (the ibstat captures of Ethernet ports in ../shared/fixtures/infiniband all
read "SM lid: 0"; ``rdma link`` in openshift/sriov-network-operator#635 shows ACTIVE IB
ports at sm_lid 1 beside DOWN/DISABLED ones at 0), so only ports whose link layer is
InfiniBand are judged, and only while physically up: a port Polling (no peer) or
Disabled is the link-flap and cabling rules' business.

One cause, one finding: every stuck port of the fabric goes into one finding (subject
``fabric``), listed in its evidence with host, state, physical state and SM LID, since
at 3 a.m. the operator starts one opensm, not one per port. ``host`` is set when all the
stuck ports are on one host (and ``port`` when there is one port), so a checker of
``doctor --json`` finds the host either there or in the ``hosts`` evidence. Where other
InfiniBand ports are ACTIVE under an SM, the stuck ones are on a fabric (a second rail)
that SM does not reach: opensm manages the one port it binds to, each fabric needs its own.

A port stuck must have held ``detect_s`` (as every rate rule's condition): a port that
just came up is in INIT until the SM's next sweep, for a moment. That is the live view's
wait; a snapshot judges the ports it read at once (``HOLDS`` in kinds.py).

What cannot be seen from sysfs: whether a standby SM runs, the SM's priority and state
(master/standby), and which node it runs on; those need management datagrams (umad,
``sminfo``/``saquery``, root). A port ACTIVE with an SM LID says an SM configured it,
not that one is still running: a master that died leaves ports ACTIVE until the next
change.
"""

from __future__ import annotations

from fabtop.core.findings import Finding, PortRef
from fabtop.core.rules.context import LinkTick, RuleContext
from fabtop.core.rules.kinds import state_rule

RULE = "no_subnet_manager"
_STUCK_STATES = ("INIT", "ARMED")


def stuck_reason(lt: LinkTick) -> str | None:
    """Why this port waits for a subnet manager (its logical state, or SM LID 0), or None."""
    link = lt.link
    if link.link_layer != "InfiniBand" or link.phys_state != "LinkUp":
        return None  # RoCE (SM LID 0 by design), unknown, or not physically up
    state = (link.port_state or "").upper()
    if state in _STUCK_STATES:
        return state
    if link.sm_lid == 0:
        return "SM LID 0"
    return None


def _port_line(lt: LinkTick) -> str:
    link = lt.link
    sm = "?" if link.sm_lid is None else f"0x{link.sm_lid:x}"
    return f"{lt.label} {link.port_state or '?'}/{link.phys_state or '?'} sm_lid {sm}"


@state_rule(RULE)
def no_subnet_manager(ctx: RuleContext) -> list[Finding]:
    """InfiniBand ports physically up but never configured: no subnet manager reaches them."""
    ports: dict[str, LinkTick] = {}
    confirmed: list[Finding] = []  # each port's own condition, once it held detect_s
    managed: set[int] = set()  # SM LIDs of ACTIVE ports: an SM configured them
    for lt in ctx.links:
        if lt.link.link_layer != "InfiniBand":
            continue
        ports[lt.subject] = lt
        reason = stuck_reason(lt)
        if reason is None and lt.link.sm_lid and lt.link.port_state == "ACTIVE":
            managed.add(lt.link.sm_lid)
        stuck = None
        if reason is not None:
            stuck = Finding(RULE, "critical", lt.subject, reason, host=lt.host, port=lt.ref)
        dt = lt.dt if lt.dt is not None else 0.0
        ctx.report_debounced(confirmed, stuck, (RULE, lt.subject), lt.t, dt)
    found = _finding([ports[f.subject] for f in confirmed], managed) if confirmed else None
    out: list[Finding] = []
    ctx.report(out, found, (RULE, "fabric"), ctx.now)
    return out


def _finding(stuck: list[LinkTick], managed: set[int]) -> Finding:
    stuck = sorted(stuck, key=lambda lt: lt.label)
    hosts = sorted({lt.host for lt in stuck})
    labels = ", ".join(lt.label for lt in stuck[:4]) + (
        f" and {len(stuck) - 4} more" if len(stuck) > 4 else ""
    )
    n = len(stuck)
    ports = f"{n} InfiniBand port{'s' if n > 1 else ''}"
    if managed:
        sms = ", ".join(f"0x{x:x}" for x in sorted(managed))
        summary = (
            f"no subnet manager reaches {ports} ({labels}): physically up but never "
            f"configured, while other InfiniBand ports are ACTIVE under the SM at LID {sms}; "
            "the stuck ones are on a fabric (another rail) with no SM of its own"
        )
    else:
        summary = (
            f"no subnet manager is running on this fabric: {ports} physically up but never "
            f"configured ({labels}); nothing passes until an SM gives them LIDs"
        )
    refs: tuple[PortRef, ...] = tuple(lt.ref for lt in stuck)
    return Finding(
        rule=RULE,
        severity="critical",
        subject="fabric",
        summary=summary,
        evidence={
            "ports": refs,
            "hosts": ", ".join(hosts),
            "state": "; ".join(_port_line(lt) for lt in stuck[:8]),
        },
        next_step=(
            f"start a subnet manager on one node of this fabric, e.g. on {hosts[0]}: "
            "systemctl start opensm (one opensm per fabric: opensm -g <port GUID> for a "
            "second rail); then ibstat (State: Active, SM lid non-zero) and sminfo. "
            "Standby SMs and SM priority need umad access (sminfo as root): fabtop "
            "reads sysfs only"
        ),
        host=hosts[0] if len(hosts) == 1 else None,
        port=refs[0] if n == 1 else None,
    )
