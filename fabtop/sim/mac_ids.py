"""Identities of the demo's Macs and their Thunderbolt cables: one place for each.

A Mac has one Thunderbolt domain UUID per bus (receptacle); the far end of a cable reports
the near bus's UUID as its peer (tests/fixtures/darwin: the Mac Studio / MacBook Pro
captures). mac1's are the real ones of the captured M3 Ultra Mac Studio; mac2's and
mac3's are synthetic (same form). To cable another host (the DGX Spark) to a Mac, add a
row to CABLES with that host's identity as the far end's UID.
"""

from __future__ import annotations

from fabtop.sim.tb_ids import SPARK1_UID

# host -> receptacle number -> that bus's own domain UUID
MAC_DOMAINS: dict[str, dict[int, str]] = {
    "mac1": {
        1: "57AE1A4C-B830-48D1-90DD-A3EDB8AC8DFC",
        2: "28CA4C30-A263-4C55-B302-953416D0B209",
        3: "C9B32174-396A-4D89-9601-E8E83285C21A",
        4: "5F771049-70BD-4C30-A4AB-4E50482D82E0",
        5: "54AA5FD1-F8F9-438A-8825-7268E164186C",
        6: "1CF1083E-9B3C-4D21-8467-769814784F4D",
    },
    "mac2": {r: f"0000000{r}-5A1D-4C0E-9D00-00000000002{r}" for r in range(1, 7)},
    "mac3": {r: f"0000000{r}-5A1D-4C0E-9D00-00000000003{r}" for r in range(1, 7)},
}
MAC_MODEL = {"mac1": "Mac15,14", "mac2": "Mac15,14", "mac3": "Mac15,14"}  # M3 Ultra Studio

# Linux hosts a Mac is cabled to: their host router's unique_id (fabtop.sim.tb_ids), which
# system_profiler prints as the peer's domain UUID (upper case).
LINUX_UIDS: dict[str, str] = {"spark1": SPARK1_UID.upper()}

# (host, receptacle, far host, far receptacle): one row per cable, Thunderbolt 5. The DGX
# Spark's end has no receptacle number (its XDomain is 0-1): 1 stands for its one port.
CABLES: tuple[tuple[str, int, str, int], ...] = (("mac1", 2, "mac2", 2), ("mac1", 3, "spark1", 1))
# The three-Mac ring of the bridge-loop scenario (a cable mac2-mac3 and mac3-mac1 more).
RING_CABLES: tuple[tuple[str, int, str, int], ...] = (
    *CABLES,
    ("mac2", 3, "mac3", 2),
    ("mac3", 3, "mac1", 4),
)


Cable = tuple[str, int, str, int]


def peers_of(host: str, cables: tuple[Cable, ...]) -> dict[int, tuple[str, str]]:
    """receptacle -> (far host, far bus's domain UUID) for every cable of ``host``."""
    out: dict[int, tuple[str, str]] = {}
    for a, ra, b, rb in cables:
        if a == host and b in MAC_DOMAINS:
            out[ra] = (b, MAC_DOMAINS[b][rb])
        elif a == host and b in LINUX_UIDS:
            out[ra] = (b, LINUX_UIDS[b])
        elif b == host and a in MAC_DOMAINS:
            out[rb] = (a, MAC_DOMAINS[a][ra])
    return out
