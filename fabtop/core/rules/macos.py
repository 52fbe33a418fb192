"""macOS Thunderbolt rules (issue 14): bridge loops, RDMA switched on but absent, RDMA on
Thunderbolt 4, an RDMA Thunderbolt port without an IPv4 address.

Facts they rest on, with their sources:
- Thunderbolt Bridge (bridge0) has no loop protection: three or more Macs cabled in a ring
  with their Thunderbolt ports in the bridge make a broadcast storm (firstbatchxyz/dnet#69;
  exo removes the bridge, exo-explore/exo#1390, and detects such cycles, exo PR #1222).
- RDMA over Thunderbolt needs Thunderbolt 5 (macOS 26.2 release notes); macOS creates
  rdma_enX devices on Thunderbolt 4 ports too, but a link of 40 Gb/s or less carries no
  RDMA (exo PR #1813).
- ``rdma_ctl status`` can say ``enabled`` while ``ibv_devices`` lists nothing
  (ml-explore/mlx#3777, exo-explore/exo#2186: JACCL then crashes in ibv_reg_mr).
- A Thunderbolt RDMA port publishes an IPv4-mapped GID only once its netdev has an IPv4
  address; without it JACCL fails with "Changing queue pair to RTR failed with errno 22"
  (ml-explore/mlx#3467, PR #4191).
"""

from __future__ import annotations

from collectors.samples import HostSample
from fabtop.core.findings import Finding, port_ref
from fabtop.core.rules.context import RuleContext, host_time
from fabtop.core.rules.kinds import state_rule

# Thunderbolt 5 links train at 80 Gb/s (120 with Bandwidth Boost); 40 Gb/s is Thunderbolt
# 3/4/USB4, which carries no RDMA (exo PR #1813 draws the line at the same place).
TB5_MIN_GBPS = 80.0
# A loop needs a ring, and a ring three or more hosts (two Macs with two cables make no
# storm: exo PR #1222's review). A mesh of three whose cables form no ring (a star: one
# Mac cabled to two hosts that are not cabled to each other) has nowhere to loop.
LOOP_MIN_NODES = 3


def _macs(ctx: RuleContext) -> list[tuple[str, HostSample, float]]:
    out = []
    for hs in ctx.state.hosts.values():
        s = hs.sample
        if s is not None and s.macos is not None:
            out.append((hs.name, s, host_time(s, hs.rates)))
    return out


def _mesh_sizes(ctx: RuleContext) -> dict[str, tuple[int, int]]:
    """Per host: the nodes and cables of its Thunderbolt mesh (hosts joined by cables, far
    ends that are not monitored counted once per distinct identity)."""
    own: dict[str, set[str]] = {}
    peers: dict[str, set[str]] = {}
    for hs in ctx.state.hosts.values():
        s = hs.sample
        tb = s.thunderbolt if s is not None else None
        if tb is None:
            continue
        uids = {p.self_uid for p in tb.peers if p.self_uid}
        if tb.self_uid:
            uids.add(tb.self_uid)
        own[hs.name] = uids
        peers[hs.name] = {p.peer_uid for p in tb.peers if p.peer_uid}
    owner = {u: h for h, us in own.items() for u in us}
    adj: dict[str, set[str]] = {h: set() for h in own}
    for h, ps in peers.items():
        for u in ps:
            other = owner.get(u, f"?{u}")
            adj[h].add(other)
            adj.setdefault(other, set()).add(h)
    sizes: dict[str, tuple[int, int]] = {}
    for start in own:
        if start in sizes:
            continue
        seen, todo = {start}, [start]
        while todo:
            for n in adj.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        cables = sum(len(adj.get(n, ())) for n in seen) // 2  # each cable seen from both ends
        for n in seen:
            sizes[n] = (len(seen), cables)
    return sizes


@state_rule("tb_bridge_loop")
def tb_bridge_loop(ctx: RuleContext) -> list[Finding]:
    """A Thunderbolt Bridge holding Thunderbolt ports on a mesh of three or more nodes whose
    cables close a ring (as many cables as nodes, or more)."""
    out: list[Finding] = []
    sizes: dict[str, tuple[int, int]] | None = None
    for host, s, t in _macs(ctx):
        mac = s.macos
        assert mac is not None
        found = None
        tbports = set(mac.thunderbolt_ports)
        for bridge, members in sorted(mac.bridges.items()):
            in_bridge = [m for m in members if m in tbports]
            if not in_bridge:
                continue
            if sizes is None:
                sizes = _mesh_sizes(ctx)
            nodes, cables = sizes.get(host, (1, 0))
            if nodes < LOOP_MIN_NODES or cables < nodes:
                continue  # no ring: a tree of cables cannot loop
            cabled = {p.netdev for p in (s.thunderbolt.peers if s.thunderbolt else ())}
            forwarding = [m for m in in_bridge if m in cabled]
            found = Finding(
                rule="tb_bridge_loop",
                severity="critical" if len(forwarding) >= 2 else "warning",
                subject=f"{host}/{bridge}",
                summary=(
                    f"{host}: {bridge} (Thunderbolt Bridge) holds Thunderbolt ports "
                    f"{', '.join(in_bridge)} on a mesh of {nodes} nodes and {cables} cables "
                    "(a ring): an L2 loop without "
                    "loop protection, a broadcast storm that takes the network down"
                ),
                evidence={
                    "bridge": bridge,
                    "thunderbolt_members": ",".join(in_bridge),
                    "cabled_members": ",".join(forwarding),
                    "mesh_nodes": nodes,
                    "mesh_cables": cables,
                },
                next_step=(
                    f"take the Thunderbolt ports out of the bridge on every node: sudo "
                    f"ifconfig {bridge} deletem <port> for each, then give each port its own "
                    "network service (networksetup -createnetworkservice) and disable "
                    '"Thunderbolt Bridge"'
                ),
                host=host,
            )
            break
        ctx.report(out, found, ("tb_bridge_loop", host), t)
    return out


@state_rule("rdma_enabled_no_device")
def rdma_enabled_no_device(ctx: RuleContext) -> list[Finding]:
    """rdma_ctl says enabled, and ibv_devinfo lists no RDMA device (or could not be read)."""
    out: list[Finding] = []
    for host, s, t in _macs(ctx):
        mac = s.macos
        assert mac is not None
        found = None
        if mac.rdma_ctl == "enabled" and not mac.rdma_devices:
            unknown = mac.rdma_devices is None
            found = Finding(
                rule="rdma_enabled_no_device",
                severity="info" if unknown else "warning",
                subject=f"{host}/rdma",
                summary=(
                    f"{host}: RDMA is enabled (rdma_ctl) but "
                    + (
                        "ibv_devinfo could not be read: RDMA devices unknown"
                        if unknown
                        else "no RDMA device is listed: jobs that need RDMA (JACCL) will fail"
                    )
                ),
                evidence={
                    "rdma_ctl": mac.rdma_ctl,
                    "rdma_devices": "unknown" if unknown else "none",
                },
                next_step=(
                    "ibv_devices; if it stays empty: run rdma_ctl enable from Recovery OS "
                    "again, reboot, and check that both ends run macOS 26.2 or later with "
                    "a Thunderbolt 5 cable in place"
                ),
                host=host,
            )
        ctx.report(out, found, ("rdma_enabled_no_device", host), t)
    return out


@state_rule("rdma_needs_tb5")
def rdma_needs_tb5(ctx: RuleContext) -> list[Finding]:
    """RDMA enabled or configured on a host whose Thunderbolt links are only Thunderbolt 4."""
    out: list[Finding] = []
    for host, s, t in _macs(ctx):
        mac = s.macos
        assert mac is not None
        tb = s.thunderbolt
        speeds = [p.link_gbps for p in (tb.peers if tb else ()) if p.link_gbps is not None]
        # macOS 26 lists rdma_enX on every Thunderbolt port, Thunderbolt 4 ones too (exo PR
        # #1813): a device alone is no sign of RDMA in use; the switch, or (where rdma_ctl
        # could not be read) an RDMA port that is up, is.
        wants_rdma = mac.rdma_ctl == "enabled" or (
            mac.rdma_ctl is None
            and any(lk.rdma_device and lk.state == "up" for lk in s.links.values())
        )
        found = None
        if wants_rdma and speeds and max(speeds) < TB5_MIN_GBPS:
            slow = [p for p in tb.peers if p.link_gbps is not None] if tb else []
            shown = ", ".join(f"{p.netdev or p.port} {p.link_gbps:g} Gb/s" for p in slow[:4])
            found = Finding(
                rule="rdma_needs_tb5",
                severity="warning",
                subject=f"{host}/thunderbolt",
                summary=(
                    f"{host}: RDMA is {'enabled' if mac.rdma_ctl == 'enabled' else 'in use'}"
                    f" but its Thunderbolt links run at Thunderbolt 4 speed ({shown}): RDMA "
                    f"over Thunderbolt needs Thunderbolt 5 ({TB5_MIN_GBPS:g} Gb/s)"
                ),
                evidence={
                    "rdma_ctl": mac.rdma_ctl,
                    "fastest_link_gbps": max(speeds),
                    "needs_gbps": TB5_MIN_GBPS,
                },
                next_step=(
                    "system_profiler SPThunderboltDataType: use Thunderbolt 5 ports and a "
                    "Thunderbolt 5 cable at both ends; on Thunderbolt 4 use TCP (MLX ring) "
                    "instead of RDMA (JACCL)"
                ),
                host=host,
            )
        ctx.report(out, found, ("rdma_needs_tb5", host), t)
    return out


@state_rule("rdma_port_no_ipv4")
def rdma_port_no_ipv4(ctx: RuleContext) -> list[Finding]:
    """An active RDMA Thunderbolt port whose netdev has no IPv4 address or GID."""
    out: list[Finding] = []
    for host, s, t in _macs(ctx):
        for link in s.links.values():
            if not link.rdma_device or link.state != "up":
                continue
            no_addr = link.addresses is not None and not any(":" not in a for a in link.addresses)
            no_gid = link.gids is not None and not any(g.ipv4_mapped for g in link.gids)
            found = None
            if no_addr or no_gid:
                what = " and ".join(
                    w
                    for w, on in (("no IPv4 address", no_addr), ("no IPv4-mapped GID", no_gid))
                    if on
                )
                found = Finding(
                    rule="rdma_port_no_ipv4",
                    severity="warning",
                    subject=f"{host}/{link.netdev or link.rdma_device}",
                    summary=(
                        f"{host} {link.netdev}: RDMA port {link.rdma_device} is up with "
                        f'{what}: JACCL fails with "Changing queue pair to RTR failed '
                        'with errno 22"'
                    ),
                    evidence={
                        "rdma_device": link.rdma_device,
                        "addresses": ",".join(link.addresses or ()) or "none",
                        "gids": ",".join(g.gid for g in link.gids or ())
                        or ("not read" if link.gids is None else "none"),
                    },
                    next_step=(
                        f"give {link.netdev} an IPv4 address (its own network service with "
                        f"DHCP/self-assigned, or sudo ifconfig {link.netdev} inet "
                        "169.254.x.y netmask 255.255.0.0 alias), then check ibv_devinfo -v "
                        f"-d {link.rdma_device} shows a ::ffff: GID"
                    ),
                    host=host,
                    port=port_ref(host, link),
                )
            ctx.report(out, found, ("rdma_port_no_ipv4", f"{host}/{link.id}"), t)
    return out
