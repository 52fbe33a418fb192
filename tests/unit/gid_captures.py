"""Real GID tables (tests/fixtures/rdma_gids, show_gids captures) as the probe sends them.

``show_gids`` prints, per populated entry, ``gids/<N>`` as read, ``gid_attrs/types/<N>``
cut to "v1"/"v2" and ``gid_attrs/ndevs/<N>`` (see the fixtures' SOURCES.md); this turns
each line back into those three ``sysib`` lines, the kernel's type strings restored, and
adds the probe's marker line per port.
"""

from __future__ import annotations

from pathlib import Path

from collectors.parsers.sysfs import parse_sysib
from collectors.samples import GidEntry

GIDS = Path(__file__).resolve().parents[1] / "fixtures" / "rdma_gids"
TYPES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}  # kernel cache.c gid_type_str


def rows(name: str) -> list[tuple[str, int, int, str, str, str]]:
    """(dev, port, index, gid, type, ndev) of each GID line of a capture."""
    out = []
    for line in (GIDS / name).read_text().splitlines():
        parts = line.split()
        if len(parts) < 6 or not parts[1].isdigit() or not parts[2].isdigit():
            continue  # the prompt, the header, its underline, n_gids_found
        dev, port, index, gid = parts[0], int(parts[1]), int(parts[2]), parts[3]
        ver, ndev = parts[-2], parts[-1]
        out.append((dev, port, index, gid, TYPES[ver], ndev))
    return out


def sysib_text(name: str) -> str:
    """The capture as ``sysib_slow`` lines (``<dev>/ports/<p>/gids/<N> <gid>`` ...)."""
    lines: list[str] = []
    ports: list[str] = []
    for dev, port, index, gid, kind, ndev in rows(name):
        pp = f"{dev}/ports/{port}"
        if pp not in ports:
            ports.append(pp)
        lines += [
            f"{pp}/gids/{index} {gid}",
            f"{pp}/gid_attrs/types/{index} {kind}",
            f"{pp}/gid_attrs/ndevs/{index} {ndev}",
        ]
    lines += [f"{pp}/gids -" for pp in ports]
    return "\n".join(lines)


def table(name: str, dev: str, port: int = 1) -> tuple[GidEntry, ...]:
    """One port's GID table of a capture, parsed as the assembler builds it."""
    rec = parse_sysib(sysib_text(name)).devices[dev].ports[port]
    assert rec.gids is not None
    return tuple(
        GidEntry(i, g, rec.gid_types.get(i), rec.gid_ndevs.get(i))
        for i, g in sorted(rec.gids.items())
    )
