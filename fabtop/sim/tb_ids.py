"""Thunderbolt identities of the demo's hosts: the one place both ends of a cable agree on.

A Linux host's identity is its host router's ``unique_id`` (``/sys/bus/thunderbolt/
devices/0-0/unique_id``); a macOS host's its bus's domain UUID (system_profiler). Each
end of a cable reports the other's: the Linux XDomain's ``unique_id`` is the far host's
identity. UUIDs are written as the kernel prints them (``%pUb``: lower-case hex).
"""

from __future__ import annotations

# The Linux <-> Linux pair (node3 <-> node4, Thunderbolt 4: 2 x 20 Gb/s).
NODE3_UID = "d2030000-0072-6b0e-23a4-1c9b3f5e8a01"
NODE4_UID = "d2030000-0072-6b0e-23a4-1c9b3f5e8a02"
# The DGX Spark and the Mac Studio it is cabled to (Thunderbolt 5: 2 x 40 Gb/s): mac1's
# receptacle 3, whose bus's domain UUID is the one the Mac simulation gives it (the darwin
# branch's fabtop/sim/mac_ids.py, MAC_DOMAINS["mac1"][3], from the captured Mac Studio).
# That bus reports SPARK1_UID as its peer once its cable row names spark1.
SPARK1_UID = "5a1e0000-0080-7e1a-4c2b-9d8e7f6a5b01"
MAC_STUDIO1_NAME = "mac1"
MAC_STUDIO1_RECEPTACLE = 3
MAC_STUDIO1_UID = "c9b32174-396a-4d89-9601-e8e83285c21a"  # as Linux prints it (lower case)
