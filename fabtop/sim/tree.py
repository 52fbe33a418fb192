"""Write a simulated host to a directory so the REAL probe can read it (integration tests).

Layout under ``root``::

    sys/class/net/...          sysfs files, one value each (the probe's ``sysfs`` root: root/sys)
    sys/class/infiniband/...
    bin/ethtool                shims printing what the simulator last wrote; put bin/ first
    bin/nvidia-smi             in the host's PATH
    bin/mlnx_qos
    bin/dpkg-query, bin/ofed_info  (software versions, issue 15)
    state/...                  the shims' data, rewritten by :func:`update`
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from collectors.parsers.nvidia_smi import FALLBACK_FIELDS
from fabtop.sim import host_text
from fabtop.sim.host import SimHost
from fabtop.sim.host_text import GPU_FIELDS

_ETHTOOL = """#!/bin/sh
# Simulated ethtool (fabtop.sim.tree): prints what the simulator last wrote.
S={state}
case "$1" in
  -S) f="$S/ethtool_S/$2" ;;
  -i) f="$S/ethtool_i/$2" ;;
  # no module diagnostics, no FEC: as a veth answers (tests/fixtures/optics/*_veth_*)
  -m | -I | --show-fec) echo "netlink error: Operation not supported" >&2; exit 1 ;;
  *) echo "ethtool: this simulated shim knows -S and -i only" >&2; exit 1 ;;
esac
if [ ! -f "$f" ]; then echo "Cannot get driver information: No such device" >&2; exit 71; fi
if [ -f "$f.rc" ]; then cat "$f" >&2; exit "$(cat "$f.rc")"; fi
cat "$f"
"""

_MLNX_QOS = """#!/bin/sh
# Simulated mlnx_qos (fabtop.sim.tree): 'mlnx_qos -i <netdev>' prints the simulator's file.
S={state}
[ "$1" = "-i" ] || {{ echo "Usage: mlnx_qos -i <interface>" >&2; exit 1; }}
f="$S/mlnx_qos/$2"
[ -f "$f" ] || {{ echo "Netlink error: no such device $2" >&2; exit 1; }}
cat "$f"
"""

_NVIDIA_SMI = """#!/bin/sh
# Simulated nvidia-smi (fabtop.sim.tree): --query-gpu=F1,F2 --format=csv,noheader,nounits
# [-lms N | -l N]; each GPU's current values are in $S/gpu/<index>.tsv (field<TAB>value).
S={state}
q=""; loop=""
while [ $# -gt 0 ]; do
  case "$1" in
    --query-gpu=*) q="${{1#--query-gpu=}}" ;;
    -lms) loop=$(awk -v ms="$2" 'BEGIN {{ printf "%.3f", ms / 1000 }}'); shift ;;
    -lms=*) loop=$(awk -v ms="${{1#-lms=}}" 'BEGIN {{ printf "%.3f", ms / 1000 }}') ;;
    -l) loop="$2"; shift ;;
    -l=*) loop="${{1#-l=}}" ;;
  esac
  shift
done
[ -n "$q" ] || {{ echo "simulated nvidia-smi supports --query-gpu only" >&2; exit 2; }}
once() {{
  for f in "$S"/gpu/*.tsv; do
    [ -f "$f" ] || continue
    awk -F '\\t' -v q="$q" '
      {{ v[$1] = $2 }}
      END {{
        n = split(q, want, ","); line = ""
        for (i = 1; i <= n; i++) {{
          if (!(want[i] in v)) {{
            printf "Field \\"%s\\" is not a valid field to query.\\n", want[i] > "/dev/stderr"
            exit 2
          }}
          line = line (i > 1 ? ", " : "") v[want[i]]
        }}
        print line
      }}' "$f" || exit 2
  done
}}
once || exit 2
[ -n "$loop" ] || exit 0
while sleep "$loop"; do once || exit 2; done
"""


_DPKG_QUERY = """#!/bin/sh
# Simulated dpkg-query (fabtop.sim.tree): '-W -f <format> rdma-core' prints the simulator's
# file (the probe's format, docs/PROBE.md); anything else is refused.
S={state}
[ "$1 $2 $4" = "-W -f rdma-core" ] || {{ echo "simulated dpkg-query: rdma-core only" >&2; exit 2; }}
if [ -f "$S/versions/rdma_core" ]; then cat "$S/versions/rdma_core"; exit 0; fi
echo "dpkg-query: no packages found matching rdma-core" >&2
exit 1
"""

_OFED_INFO = """#!/bin/sh
# Simulated ofed_info (fabtop.sim.tree): '-s' prints the simulator's release line.
S={state}
[ "$1" = "-s" ] || {{ echo "simulated ofed_info: -s only" >&2; exit 1; }}
cat "$S/versions/ofed_info"
"""

_IP = """#!/bin/sh
# Simulated ip (fabtop.sim.tree): 'ip -o addr show' prints the simulator's addresses.
S={state}
[ "$*" = "-o addr show" ] || {{ echo "simulated ip: -o addr show only" >&2; exit 1; }}
cat "$S/ip_addr"
"""


def _put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # a reader never sees a half-written file


def _shim(path: Path, text: str) -> None:
    _put(path, text)
    path.chmod(0o755)


def _gpu_fields() -> list[str]:
    seen: dict[str, None] = {}
    for f in (*GPU_FIELDS, *FALLBACK_FIELDS):
        seen[f] = None
    return list(seen)


def write(host: SimHost, root: Path, t: float | None = None) -> None:
    """Create the sysfs tree, the shims and their data for ``host`` at time ``t``."""
    root = Path(root)
    state = root / "state"
    for sub in ("ethtool_S", "ethtool_i", "mlnx_qos", "gpu"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    q = shlex.quote(str(state))
    _shim(root / "bin" / "ethtool", _ETHTOOL.format(state=q))
    _shim(root / "bin" / "mlnx_qos", _MLNX_QOS.format(state=q))
    _shim(root / "bin" / "nvidia-smi", _NVIDIA_SMI.format(state=q))
    _shim(root / "bin" / "dpkg-query", _DPKG_QUERY.format(state=q))
    _shim(root / "bin" / "ip", _IP.format(state=q))
    _put(state / "ip_addr", host_text.ip_addr(host) + "\n")
    if host.cfg.ofed is not None:  # a host without OFED has no ofed_info
        _shim(root / "bin" / "ofed_info", _OFED_INFO.format(state=q))
    (state / "versions").mkdir(parents=True, exist_ok=True)
    for kind, _, status, _, text in host_text.version_sections(host.cfg):
        if kind in ("rdma_core", "ofed_info") and status == "ok":
            _put(state / "versions" / kind, text + "\n")
    # GID table entries the kernel lists but nothing fills: an all-zero GID, types and
    # ndevs that fail to read (EINVAL on a real /sys; empty here). The probes skip them.
    for i in range(host.cfg.roce_ports):
        port = root / "sys" / "class" / "infiniband" / f"mlx5_{i}" / "ports" / "1"
        first = 2 + 2 * len(host.cfg.roce_addrs)
        for idx in range(first, first + 4):
            _put(port / "gids" / str(idx), "0000:0000:0000:0000:0000:0000:0000:0000\n")
            _put(port / "gid_attrs" / "types" / str(idx), "")
            _put(port / "gid_attrs" / "ndevs" / str(idx), "")
    update(host, root, host.fabric.grid_t if t is None else t)


def update(host: SimHost, root: Path, t: float) -> None:
    """Rewrite every file for simulation time ``t`` (call once per tick)."""
    root = Path(root)
    fab = host.fabric
    fab.at(t)
    frac = t - fab.grid_t
    for base, lines in (
        (root / "sys" / "class" / "net", host_text.sysnet_lines(host, frac)),
        (root / "sys" / "class" / "infiniband", host_text.sysib_lines(host, frac)),
        (root / "sys" / "bus" / "thunderbolt" / "devices", host_text.systb_lines(host)),
    ):
        for rel, value in lines:
            p = base / rel
            if value == "-":  # an entry the probe only checks for (device, net/<ndev>)
                p.mkdir(parents=True, exist_ok=True)
            else:
                _put(p, value + "\n")
    state = root / "state"
    for nd in host.netdevs():
        status, detail, text = host_text.ethtool_s(host, nd, frac)
        _put(state / "ethtool_S" / nd, text + "\n" if status == "ok" else "no stats available\n")
        rc = state / "ethtool_S" / f"{nd}.rc"
        if status != "ok" and detail and detail.startswith("rc="):
            _put(rc, detail[3:] + "\n")
        elif rc.exists():
            rc.unlink()
        _put(state / "ethtool_i" / nd, host_text.ethtool_i(host.cfg, nd) + "\n")
    for i in range(host.cfg.roce_ports):
        _put(state / "mlnx_qos" / host.cfg.netdev(i), host_text.mlnx_qos(host.cfg) + "\n")
    clock_s = fab.base_epoch_s + t
    fields = _gpu_fields()
    for g in host.gpus:
        values = g.values(tuple(fields), clock_s)
        body = "".join(f"{f}\t{v}\n" for f, v in zip(fields, values, strict=True))
        _put(state / "gpu" / f"{g.index}.tsv", body)
