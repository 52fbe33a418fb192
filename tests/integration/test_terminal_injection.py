"""Remote strings never reach the operator's terminal as control sequences (DESIGN §10).

A node prints a firmware version, an inference server labels its model: whoever can open
port 8000 on a node controls those bytes. Here both carry OSC 52 (write the clipboard) and
OSC 0 (set the window title). The real dashboard runs in a pseudo-terminal on a local
node built from real captures, and ``doctor``, ``replay --info`` and ``diff`` run as
subprocesses; none of the bytes they write may hold an injected payload.

Textual itself emits OSC 52 when it copies, so the tests look for the payloads (unique to
each run), never for "any OSC". Each payload is short and placed first in its string, so a
narrow table column cannot crop it away and let a leak pass unseen.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import pty
import re
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.httpd import QuietHandler, serve

ROOT = Path(__file__).resolve().parents[2]
FABTOP = ROOT / ".venv" / "bin" / "fabtop"
ETHTOOL_S = "ethtool/ethtool_S_i40e_xxv710_25g_iwl.txt"
ETHTOOL_I = "ethtool/ethtool_i_i40e_xxv710_25g_iwl.txt"
ETHTOOL_I_OTHER = "ethtool/ethtool_i_i40e_x710_10g_sfp_go-ethtool-metrics.txt"  # 8.60 ...
VLLM = "llm_metrics/vllm_metrics_datadog.txt"
MODEL = "facebook/opt-125m"  # the capture's model_name label
FIRMWARE = "6.02 0x800036e3 1.1861.0"  # the capture's firmware-version
COLS, ROWS = 120, 40


@dataclass(frozen=True)
class Payloads:
    """What an attacker would put on the clipboard and in the title, one of each per source."""

    fw_clip: str
    fw_title: str
    model_clip: str
    model_title: str
    name_clip: str  # in names and errors of crafted files (a recording, a snapshot)
    name_title: str

    def all(self) -> dict[str, bytes]:
        return {k: v.encode() for k, v in vars(self).items()}


def _payloads() -> Payloads:
    def clip(tag: str) -> str:
        # 9 random bytes are 12 base64 characters: fits a 20-column cell after "]52;c;".
        return (
            base64.b64encode(secrets.token_bytes(9)).decode().replace("+", "A").replace("/", "B")
            + tag
        )

    # A name is shown in a 12-column host cell: its payload is shorter still.
    name = base64.b64encode(secrets.token_bytes(6)).decode().replace("+", "A").replace("/", "B")
    return Payloads(
        clip("F"),
        "T" + secrets.token_hex(5),
        clip("M"),
        "T" + secrets.token_hex(5),
        name[:7],
        "T" + secrets.token_hex(4),
    )


def firmware_line(p: Payloads) -> str:
    # BEL-terminated, as `printf '\e]52;c;...\a'` writes them.
    return f"firmware-version: \x1b]52;c;{p.fw_clip}\x07\x1b]0;{p.fw_title}\x07{FIRMWARE}"


def model_label(p: Payloads) -> str:
    # ST-terminated (ESC \\), the other form terminals accept.
    return f"\x1b]52;c;{p.model_clip}\x1b\\\x1b]0;{p.model_title}\x1b\\{MODEL}"


def hostile_name(p: Payloads, name: str) -> str:
    return f"\x1b]52;c;{p.name_clip}\x07\x1b]0;{p.name_title}\x07{name}"


@dataclass
class Node:
    """A local node (no ssh): a sysfs tree from captures, shim tools, a /metrics server."""

    root: Path
    config: Path
    payloads: Payloads


class _Metrics(QuietHandler):
    body = b""

    def do_GET(self) -> None:
        self.reply(self.body)


def _tool(bindir: Path, name: str, body: str) -> None:
    p = bindir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


@pytest.fixture()
def node(tmp_path: Path, fixtures_dir: Path) -> Iterator[Node]:
    """Hosts n1 and n2 report the hostile firmware line, n3 another firmware (so the
    firmware_mismatch rule names the hostile one in a finding); n1 runs the server."""
    p = _payloads()
    root = tmp_path / "node"
    sysroot = root / "sys"
    shutil.copytree(
        fixtures_dir / "sysfs/prometheus_procfs/sys/class/net", sysroot / "class/net", symlinks=True
    )
    # The capture has no statistics/: give eth0 counters, so it is a link with counters.
    stats = sysroot / "class/net/eth0/statistics"
    stats.mkdir()
    for name in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped"):
        (stats / name).write_text("1000\n")
    cap_i = fixtures_dir / ETHTOOL_I
    lines = [
        firmware_line(p) if ln.startswith("firmware-version:") else ln
        for ln in cap_i.read_text().splitlines()
    ]
    assert any(ln.startswith("firmware-version: \x1b") for ln in lines)
    hostile_i = root / "ethtool_i.txt"
    hostile_i.write_text("\n".join(lines) + "\n")
    for kind, cap in (("hostile", hostile_i), ("other", fixtures_dir / ETHTOOL_I_OTHER)):
        bindir = root / f"bin-{kind}"
        bindir.mkdir()
        _tool(
            bindir,
            "ethtool",
            f'case $1 in -S) cat "{fixtures_dir / ETHTOOL_S}" ;; -i) cat "{cap}" ;; '
            "*) exit 1 ;; esac\n",
        )
    text = (fixtures_dir / VLLM).read_text()
    assert f'model_name="{MODEL}"' in text
    body = text.replace(f'model_name="{MODEL}"', f'model_name="{model_label(p)}"')
    handler = type("Metrics", (_Metrics,), {"body": body.encode()})
    with serve(handler) as port:
        cfg = tmp_path / "fabtop.toml"
        hosts = []
        for name, kind in (("n1", "hostile"), ("n2", "hostile"), ("n3", "other")):
            hosts.append(
                f'[[host]]\nname = "{name}"\nsysfs = "{sysroot}"\n'
                f'path = ["{root / f"bin-{kind}"}"]\n'
            )
        hosts[0] += f'inference = ["http://127.0.0.1:{port}/metrics"]\n'
        cfg.write_text("interval = 0.5\n" + "".join(hosts))
        yield Node(root, cfg, p)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "CI")}
    env.update(
        TERM="xterm-256color",
        HOME=str(home),
        COLUMNS=str(COLS),
        LINES=str(ROWS),
        PYTHONUNBUFFERED="1",
    )
    env.pop("NO_COLOR", None)
    return env


def leaked(out: bytes, p: Payloads) -> list[str]:
    """Which payloads appear in ``out`` (as text or inside a sequence), with their context."""
    found = []
    for k, v in p.all().items():
        i = out.find(v)
        if i >= 0:
            found.append(f"{k} in {out[max(0, i - 40) : i + len(v) + 20]!r}")
    return found


class Pty:
    """A command on a pseudo-terminal of COLS x ROWS; every byte it writes is kept."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.master = master
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=_env(cwd),
            start_new_session=True,
        )
        os.close(slave)
        self.out = bytearray()

    def read_for(self, seconds: float) -> None:
        """Collect output for ``seconds`` (or until the program closes the terminal)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            r, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if not r:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the slave side is closed, the program is gone
                return
            if not chunk:
                return
            self.out += chunk

    def press(self, keys: bytes, settle: float = 1.0) -> None:
        os.write(self.master, keys)
        self.read_for(settle)

    def wait_for(self, needle: bytes, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if needle in self.out:
                return True
            self.read_for(0.3)
        return needle in self.out

    def close(self) -> int:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            rc = self.proc.wait()
        self.read_for(0.2)
        os.close(self.master)
        return rc


def _visible(out: bytes | bytearray) -> str:
    """The terminal output with escape sequences dropped: roughly what the screen showed."""
    text = out.decode("utf-8", "replace")
    return re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b.", "", text)


def test_dashboard_never_writes_a_remote_payload_to_the_terminal(node: Node) -> None:
    term = Pty([str(FABTOP), "-c", str(node.config)], node.root)
    try:
        # The first frames: eth0 in the links table, the host up.
        assert term.wait_for(b"eth0", 20), _visible(term.out)[-2000:]
        term.read_for(2.5)  # a slow tick has run: ethtool -i and /metrics were read
        term.press(b"\r", 2.5)  # Enter: eth0's link detail (the firmware is in its title)
        term.press(b"\x1b", 1.0)
        term.press(b"4", 2.0)  # inference: the model column
        term.press(b"3", 1.0)  # GPUs
        term.press(b"5", 1.0)  # timeline
        term.press(b"1", 1.0)
        term.press(b"q", 2.0)
    finally:
        rc = term.close()
    out = bytes(term.out)
    shown = _visible(out)
    assert not leaked(out, node.payloads), (
        f"remote payloads reached the terminal: {leaked(out, node.payloads)}"
    )
    # The strings were shown (without their sequences), so the test cannot pass by
    # showing nothing: the firmware in the link detail, the model in the inference table.
    assert "eth0" in shown
    assert "0x800036e3" in shown, shown[-3000:]
    assert "opt-125m" in shown, shown[-3000:]
    assert "firmware differs" in shown, shown[-3000:]  # the finding that quotes n1's firmware
    assert rc == 0


def _run(args: list[str], cwd: Path, timeout: float = 90) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=cwd,
        env=_env(cwd),
        capture_output=True,
        timeout=timeout,
    )


def _check(r: subprocess.CompletedProcess[bytes], p: Payloads) -> bytes:
    out = r.stdout + r.stderr
    assert not leaked(out, p), f"remote payloads in the output: {leaked(out, p)}"
    assert b"Traceback" not in out, out.decode(errors="replace")
    return out


def test_doctor_never_prints_a_remote_payload(node: Node) -> None:
    r = _run(["doctor", "-c", str(node.config), "--window", "3"], node.root)
    out = _check(r, node.payloads)
    assert r.returncode in (1, 2), out
    # The finding quotes the firmware of n1 and n2: doctor printed the remote string.
    assert b"NIC firmware differs" in out and b"0x800036e3" in out, out
    r = _run(["doctor", "-c", str(node.config), "--window", "3", "--json"], node.root)
    out = _check(r, node.payloads)
    json.loads(r.stdout)  # still a JSON document


def crafted_recording(real: Path, out: Path, p: Payloads) -> None:
    """``real`` re-written with valid CRCs, n1 renamed to carry OSC sequences, and a status
    record whose error carries them too: a recording as anyone can write one."""
    from fabtop.config import Config, HostConfig
    from fabtop.run.record import (
        EVALUATED,
        FRAME,
        METRICS,
        STATUS,
        Recorder,
        RecordingReader,
        decode_frame,
        metrics_readings,
    )

    evil = hostile_name(p, "n1")
    reader = RecordingReader(real)
    records = list(reader.records())
    now = [0.0]
    cfg = reader.config()
    hosts = [HostConfig(name=evil) if h.name == "n1" else h for h in cfg.hosts]
    rec = Recorder(out, Config(hosts=hosts, interval=cfg.interval), clock=lambda: now[0])
    rec.open()
    for r in records:
        now[0] = r.t
        host = evil if r.host == "n1" else r.host
        if r.kind == FRAME and (frame := decode_frame(r)) is not None:
            rec.frame(host, frame)
        elif r.kind == METRICS:
            rec.metrics(host, metrics_readings(r))
        elif r.kind == STATUS:
            rec.status(host, str(r.head.get("state")), r.head.get("error"), r.head.get("rtt_s"))
        elif r.kind == EVALUATED:
            rec.evaluated()
    rec.status("n2", "down", hostile_name(p, "connection reset"), None)
    rec.close()


def crafted_snapshot(real: Path, out: Path, p: Payloads, moved: int = 0) -> None:
    """``real`` with n1 and its eth0 renamed to carry OSC sequences; eth0's rx_bytes
    ``moved`` on, so ``diff`` has a row that names them."""
    doc = json.loads(real.read_text())
    for h in doc["hosts"]:
        if h["name"] != "n1":
            continue
        h["name"] = hostile_name(p, "n1")
        for link in h.get("links", []):
            if link.get("id") == "eth0":
                link["id"] = hostile_name(p, "eth0")
                link["metrics"]["rx_bytes"] += moved
    out.write_text(json.dumps(doc))


def test_recordings_snapshots_and_their_diffs_never_print_a_payload(node: Node) -> None:
    p = node.payloads
    rec = node.root / "run.fabrec"
    r = _run(["record", "-c", str(node.config), "-o", str(rec), "--duration", "4"], node.root)
    _check(r, p)
    assert r.returncode == 0 and rec.is_file(), r.stderr.decode(errors="replace")
    evil = node.root / "evil.fabrec"
    crafted_recording(rec, evil, p)
    for path in (rec, evil):
        out = _check(_run(["replay", str(path), "--info"], node.root), p)
        assert re.search(rb"hosts .*n1 \(\d+ frames\)", out), out
        out = _check(_run(["replay", str(path), "--findings"], node.root), p)
        assert b"NIC firmware differs" in out and b"0x800036e3" in out, out
        for extra in ([], ["--json"]):
            _check(_run(["diff", f"{path}@1", f"{path}@3", *extra], node.root), p)
    # The replay --findings of the crafted file quotes its status error: n2 went down.
    assert b"connection reset" in out
    snaps = []
    for i, name in enumerate(("a", "b")):
        path = node.root / f"{name}.json"
        _check(_run(["snapshot", "-c", str(node.config), "-o", str(path)], node.root), p)
        assert path.is_file()
        in_file = leaked(path.read_bytes(), p)
        assert not in_file, f"payloads written to the snapshot: {in_file}"
        crafted_snapshot(path, node.root / f"evil-{name}.json", p, moved=1000 * i)
        snaps.append(str(node.root / f"evil-{name}.json"))
    out = _check(_run(["diff", *snaps], node.root), p)
    assert b"eth0" in out and b"n1" in out, out  # the row that names them was printed
    _check(_run(["diff", *snaps, "--json"], node.root), p)
    # The replay dashboard over the crafted recording: names in every table and finding.
    term = Pty([str(FABTOP), "replay", str(evil)], node.root)
    try:
        assert term.wait_for(b"eth0", 20), _visible(term.out)[-2000:]
        term.read_for(5.0)  # to the end: n2's status record, its finding
        term.press(b"4", 1.0)
        term.press(b"1", 1.0)
        term.press(b"q", 2.0)
    finally:
        term.close()
    out = bytes(term.out)
    assert not leaked(out, p), f"payloads reached the terminal: {leaked(out, p)}"
    assert "did not answer" in _visible(out), _visible(out)[-3000:]
