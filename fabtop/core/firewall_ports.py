"""The TCP ports the RDMA path needs open on the fabric interfaces: one place, with why.

RDMA data never passes netfilter on hardware RoCE or InfiniBand, but the connection
set-up around it does, over TCP on the same interfaces (``[firewall] ports`` in the
config replaces the list):

| ports | who listens | why |
|---|---|---|
| 18515 | perftest (ib_write_bw, ib_send_bw, ...) | its default ``-p``: the two sides swap QP numbers over TCP before any RDMA (the cluster guide's own example) |
| 29500 | torch.distributed's rendezvous | the usual ``MASTER_PORT``; set it here when the job uses another |
| 32768-60999 | NCCL's bootstrap and proxy sockets | bound to port 0 on ``NCCL_SOCKET_IFNAME``: the kernel picks from ``net.ipv4.ip_local_port_range``, 32768-60999 by default |
"""  # noqa: E501 (a markdown table)

from __future__ import annotations

from collectors.numbers import parse_uint

PortRange = tuple[int, int]

DEFAULT_FIREWALL_PORTS: tuple[PortRange, ...] = ((18515, 18515), (29500, 29500), (32768, 60999))


def parse_port_spec(v: object) -> PortRange | None:
    """A port (``18515``) or a range (``"32768-60999"``) as (low, high); None when bad."""
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, v) if 1 <= v <= 65535 else None
    if isinstance(v, str):
        # The number reader's, ASCII digits only: str.isdigit() takes "²", which int()
        # refuses (a config error said as "internal error").
        lo, sep, hi = v.strip().partition("-")
        a = parse_uint(lo)
        b = parse_uint(hi) if sep else a
        if a is not None and b is not None and 1 <= a <= b <= 65535:
            return a, b
    return None


def port_text(p: PortRange) -> str:
    """``18515`` or ``32768-60999``."""
    return str(p[0]) if p[0] == p[1] else f"{p[0]}-{p[1]}"
