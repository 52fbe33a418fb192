"""``fabtop doctor`` as a job launcher would run it: the real CLI in a subprocess.

The runs go against single-fault demo fabrics (``--demo-scenario``, simulated hosts
behind the same transports and pipeline), this machine probed for real with an empty
sysfs (a node with no RDMA device) and a closed port, concurrently, so the file stays fast.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
SEVERITY_ORDER = ("critical", "warning", "info")


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "doctor", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def cpu_node(tmp: Path) -> Path:
    """A config for this machine seen through a sysfs with one plain netdev: no RDMA."""
    net = tmp / "sys/class/net/eth9"
    net.mkdir(parents=True)
    (net / "operstate").write_text("up\n")
    (net / "mtu").write_text("1500\n")
    cfg = tmp / "cpu.toml"
    cfg.write_text(f'[[host]]\nname = "cpu1"\nsysfs = "{tmp / "sys"}"\n')
    return cfg


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, str]]:
    cpu = cpu_node(tmp_path_factory.mktemp("cpu"))
    # --window 1 asks for less than the rules need: doctor stretches it to detect_s + 2 ticks.
    jobs = {
        "cpu": start("-c", str(cpu), "--window", "1"),
        "down": start(f"nobody@127.0.0.1:{free_port()}", "--window", "1"),
        "healthy": start("--demo-scenario", "healthy", "--window", "1"),
        "healthy_json": start("--demo-scenario", "healthy", "--window", "1", "--json"),
        "no_ecn": start("--demo-scenario", "no_ecn", "--window", "1"),
        "storm": start("--demo-scenario", "pfc_storm", "--window", "1"),
        "storm_json": start("--demo-scenario", "pfc_storm", "--window", "1", "--json"),
        "bad": start("--demo-scenario", "nonsense"),
    }
    out = {}
    for name, p in jobs.items():
        stdout, stderr = p.communicate(timeout=60)
        out[name] = (p.returncode, stdout, stderr)
    return out


def test_healthy_fabric_exits_0_with_one_calm_line(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, _ = runs["healthy"]
    assert rc == 0
    # what was seen, and what was not monitored (only node1 runs an inference server)
    # (the DGX Spark is simulated with its Thunderbolt link only: no RDMA NIC, no GPU)
    assert out.splitlines()[0] == (
        "fabtop doctor: no problems in what was seen; "
        "no RDMA device on spark1; GPUs not monitored on spark1 "
        "(no GPU tool answered); no inference server on node2, "
        "node3, node4, mac1 and 2 more; "
        "unverified on mac1, mac2 (ibv_devinfo -v GID lines "
        "(macOS: documented, never captured); macmon pipe JSON "
        "(from its README's example only))"
    )
    assert "healthy" not in out
    rc, out, err = runs["healthy_json"]
    assert rc == 0
    doc = json.loads(out)
    assert all(f["severity"] == "info" for f in doc["findings"])
    assert doc["coverage"]["reporting"] == [
        "node1",
        "node2",
        "node3",
        "node4",
        "mac1",
        "mac2",
        "spark1",
    ]
    gaps = doc["coverage"]["gaps"]
    assert gaps[2] == "no inference server on node2, node3, node4, mac1 and 2 more"
    assert doc["coverage"]["gaps"][3].startswith("unverified on mac1, mac2")
    assert err == ""  # --json to a pipe: stderr stays quiet


def test_a_node_without_rdma_or_gpu_tool_is_not_a_failure(
    runs: dict[str, tuple[int, str, str]],
) -> None:
    rc, out, err = runs["cpu"]
    assert rc == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith(
        "fabtop doctor: no problems in what was seen; no RDMA device on cpu1; "
    )
    assert "healthy" not in out
    if not any(shutil.which(t) for t in ("nvidia-smi", "amd-smi", "rocm-smi")):
        assert "; GPUs not monitored on cpu1 (no nvidia-smi, amd-smi or rocm-smi)" in lines[0]
        # the probe's own warning, in the notes block
        assert lines[lines.index("notes:") + 1 :] and any(
            ln.startswith("  cpu1: ") and "no nvidia-smi" in ln for ln in lines
        )
    # Not silent while it watches: a start and an end line on stderr (not a terminal).
    progress = err.splitlines()
    assert progress[0].startswith("fabtop doctor: watching 1 host, 0 s of ")
    assert progress[-1].startswith("fabtop doctor: watched 1 host, ")
    assert progress[-1].endswith("; 1 up")
    assert "\r" not in err


def test_a_closed_port_is_critical_and_said_once(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, err = runs["down"]
    assert rc == 2, out + err
    assert out.startswith("CRITICAL (1)\n  127.0.0.1: 127.0.0.1 did not answer: ")
    assert "connection refused" in out
    assert out.count("did not answer") == 1
    assert "no problems" not in out
    assert err.splitlines()[-1].endswith("; 1 down")


def test_progress_on_a_terminal_rewrites_one_line_and_erases_it() -> None:
    from fabtop.commands.headless import Progress
    from fabtop.core.state import UP, FabricState

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    class Host:
        def __init__(self, name: str) -> None:
            self.name, self.target = name, name

    state = FabricState([Host("n1"), Host("n2")])
    state.apply_status("n1", UP)
    tty = Tty()
    p = Progress(state, 10.0, 1.0, stream=tty, quiet_unless_tty=True)
    for i in range(31):
        p(i * 0.1)  # three seconds at the doctor's 20 Hz: once a second, not 31 times
    p.done(3.0)
    text = tty.getvalue()
    assert text.count("\r\x1b[K") == 4 + 1 and "\n" not in text  # 0, 1, 2, 3 s; erased
    assert "\r\x1b[Kfabtop doctor: watching 2 hosts, 2 s of 10 s; 1 up, 1 connecting" in text
    assert text.endswith("\r\x1b[K")


def test_warnings_only_exit_1(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, _ = runs["no_ecn"]
    assert rc == 1, out
    assert out.startswith("WARNING (")
    assert "CRITICAL" not in out
    assert "node2/enp65s0f0np0" in out and "next: " in out


def test_pfc_storm_exits_2_grouped_worst_first(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, _ = runs["storm"]
    assert rc == 2, out
    # the severity groups; the "not monitored" and "notes" blocks follow them
    heads = [line.split(" (")[0] for line in out.splitlines() if line.split(" (")[0].isupper()]
    assert heads[0] == "CRITICAL"
    ranks = [SEVERITY_ORDER.index(h.lower()) for h in heads]
    assert ranks == sorted(ranks)  # groups in severity order, each once
    assert "node3/enp65s0f0np0/prio3: " in out
    assert "stuck receiver" in out
    # the subject is not repeated at the start of its summary
    assert "prio3: node3/enp65s0f0np0 prio 3:" not in out


def test_json_is_the_snapshot_findings_format(runs: dict[str, tuple[int, str, str]]) -> None:
    from fabtop.core.findings import Finding
    from fabtop.run.snapshot import finding_entry

    rc, out, _ = runs["storm_json"]
    assert rc == 2
    doc = json.loads(out)
    keys = set(finding_entry(Finding("r", "info", "s", "x")))
    assert doc["findings"] and all(set(f) == keys for f in doc["findings"])
    storm = [f for f in doc["findings"] if f["rule"] == "pfc_storm"]
    assert storm[0]["subject"] == "node3/enp65s0f0np0/prio3"
    assert storm[0]["evidence"]["stuck_receiver"] == "node3/enp65s0f0np0"


def test_unknown_scenario_is_a_one_line_error(runs: dict[str, tuple[int, str, str]]) -> None:
    rc, out, err = runs["bad"]
    assert rc == 2 and out == ""
    assert "unknown --demo-scenario 'nonsense'" in err and "pfc_storm" in err
