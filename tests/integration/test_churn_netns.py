"""Real netdevs coming and going under the fast probe: the stream keeps decoding, bounded.

Pod veths and SR-IOV VFs appear and vanish on a serving node; each change gives the fast
probe a new schema (its netdevs' names) and a new ethtool section. Here real veth pairs
churn in a network namespace while the probe reads them through ETHTOOL_GSTATS at its
fastest cadence: every frame decodes, and the collector's decoder holds only the schemas
in use (issue 27, class 2).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from collectors.probe import ProbeArgs, build_argv
from tests.conftest import skip_or_fail
from tests.integration.test_probe import SYSTEM_PATH, Probe, _start, run_probe  # noqa: F401

CHANGES = 40


@pytest.mark.root
def test_veths_churning_under_the_fast_probe_keep_every_frame_decoding(
    tmp_path: Path,
    run_probe: list[Probe],  # noqa: F811
) -> None:
    if os.geteuid() != 0 or not shutil.which("ip"):
        skip_or_fail("needs root and ip (apt-get install iproute2)")
    ns = f"fabtop-churn-{os.getpid()}"
    ip = ["ip", "-n", ns]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(
            [*ip, "link", "add", "keep", "type", "veth", "peer", "name", "keep1"], check=True
        )
        # Every tick rescans (slow_ticks=1), so every change is a new netdev set; veths
        # have no device link: named, they are read through the ethtool ioctl too.
        names = ("keep", "keep1", *(f"pod{i}{p}" for i in range(CHANGES) for p in ("", "p")))
        args = ProbeArgs(
            interval_ms=100,
            max_frames=0,
            gpu="off",
            probe="python",
            path=(),
            slow_ticks=1,
            interfaces=names,
        )
        argv = ["ip", "netns", "exec", ns, "sh", "-s", "--", *build_argv(args)]
        probe = _start(run_probe, argv, tmp_path, env_path=SYSTEM_PATH + ":/usr/sbin:/sbin")
        assert len(probe.frames(2, deadline_s=15)) == 2
        errors: list[tuple[str, str | None, str | None]] = []
        for i in range(CHANGES):
            subprocess.run(
                [*ip, "link", "add", f"pod{i}", "type", "veth", "peer", "name", f"pod{i}p"],
                check=True,
            )
            if i:
                subprocess.run([*ip, "link", "del", f"pod{i - 1}"], check=True)
            for f in probe.frames(2, deadline_s=10):
                # Every values section placed: none naming a schema the stream lost.
                errors += [
                    (s.kind, s.subject, s.detail)
                    for s in f.sections
                    if (s.detail or "").startswith("values for schema")
                    or (s.schema is not None and (s.values is None or s.values.vals is None))
                ]
        (last,) = probe.frames(1, deadline_s=10)
        assert errors == []
        dec = probe.decoder
        # In use: the ethtool sections of keep, keep1, pod{last} and pod{last}p, and the
        # sysfs counters: far fewer than the changes made.
        live = {(s.kind, s.subject) for s in last.sections if s.schema is not None}
        assert len(dec.schemas) <= len(live) + 1 < CHANGES
        assert dec.undecoded == 0
        pod = last.find("ethtool_S", f"pod{CHANGES - 1}")
        assert pod is not None and pod.status == "ok" and pod.values is not None
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
