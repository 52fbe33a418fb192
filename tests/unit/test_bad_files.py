"""Crafted snapshots and recordings: one line naming the file and the field, exit 2, never a
traceback; a decompression bomb is bounded; every string loaded from them is clean.

The recordings here are written byte by byte with valid CRCs (the format of
fabtop/run/record.py), so each holds exactly the odd JSON a crafted file would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.samples import GpuSample, InferenceSample, LinkSample, PcieLink
from collectors.text import has_control
from fabtop.commands.diff import DeltaRow, DiffError, NoData, diff_command, load_point
from fabtop.config import Config, HostConfig, SshTarget
from fabtop.core.state import FabricState, HostState
from fabtop.run import snapshot
from fabtop.run.record import (
    MAGIC,
    MAX_PAYLOAD_BYTES,
    Record,
    Recorder,
    RecordError,
    RecordingReader,
    metrics_readings,
    summary,
)
from fabtop.run.replay import Replay
from fabtop.run.session import MetricsReading
from tests.conftest import REPO

GOOD_CONFIG = {
    "source": "x",
    "interval": 1.0,
    "thresholds": {},
    "hosts": [
        {
            "name": "n1",
            "target": "local",
            "sysfs": "/sys",
            "path": [],
            "interfaces": None,
            "inference": [],
        }
    ],
}


def craft(path: Path, records: list[tuple[str, Any]], header: Any = None) -> Path:
    """A .fabrec whose every record passes its CRC: a head (JSON value or raw bytes) each."""
    z = zlib.compressobj(6)
    out = bytearray(MAGIC)
    head = header if header is not None else {"schema": "fabtop.rec/1", "config": GOOD_CONFIG}
    for kind, h in [("H", head), *records]:
        payload = h if isinstance(h, bytes) else json.dumps(h).encode() + b"\n"
        stored = z.compress(payload) + z.flush(zlib.Z_SYNC_FLUSH)
        out += (
            kind.encode()
            + len(stored).to_bytes(4, "big")
            + zlib.crc32(stored).to_bytes(4, "big")
            + stored
        )
    path.write_bytes(bytes(out))
    return path


def fabtop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def one_line_error(run: subprocess.CompletedProcess[str], *parts: str) -> str:
    assert run.returncode == 2, (run.returncode, run.stdout[-500:], run.stderr[-2000:])
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    for p in parts:
        assert p in lines[0], (p, lines[0])
    return lines[0]


_NAN = b'{"t": NaN, "host": "n1"}\n'
BAD_RECORDINGS: dict[str, tuple[list[tuple[str, Any]], Any, str]] = {
    # name: (records, header or None, what the error names)
    "hosts_not_a_list": ([], {"schema": "fabtop.rec/1", "config": {"hosts": "n1"}}, "config.hosts"),
    "host_without_name": (
        [],
        {"schema": "fabtop.rec/1", "config": {"hosts": [{"target": "local"}]}},
        "config.hosts[0].name",
    ),
    "interval_text": (
        [],
        {"schema": "fabtop.rec/1", "config": {**GOOD_CONFIG, "interval": "x"}},
        "config.interval",
    ),
    "interval_infinite": (
        [],
        b'{"schema": "fabtop.rec/1", "config": {"interval": 1e999}}\n',
        "config.interval",
    ),
    "config_a_list": ([], {"schema": "fabtop.rec/1", "config": [1]}, "config"),
    "path_a_string": (
        [],
        {"schema": "fabtop.rec/1", "config": {"hosts": [{"name": "n1", "path": 5}]}},
        "config.hosts[0].path",
    ),
    "t_text": ([("S", {"t": "soon", "host": "n1", "state": "up"})], None, "'t'"),
    "t_negative": ([("E", {"t": -5})], None, "'t'"),
    "t_nan": ([("S", _NAN)], None, "NaN"),
    "host_a_list": ([("F", {"t": 1, "host": ["n1"]})], None, "'host'"),
    "status_rtt_text": (
        [("S", {"t": 1, "host": "n1", "state": "up", "rtt_s": "fast"})],
        None,
        "'rtt_s'",
    ),
    "status_state_unknown": ([("S", {"t": 1, "host": "n1", "state": "pwned"})], None, "'state'"),
    "status_error_object": (
        [("S", {"t": 1, "host": "n1", "state": "down", "error": {"a": 1}})],
        None,
        "'error'",
    ),
    "readings_an_object": (
        [("M", {"t": 1, "host": "n1", "readings": {"url": "x"}})],
        None,
        "'readings'",
    ),
    "reading_a_number": ([("M", {"t": 1, "host": "n1", "readings": [7]})], None, "'readings[0]'"),
    "reading_status_text": (
        [
            (
                "M",
                {
                    "t": 1,
                    "host": "n1",
                    "readings": [{"url": "http://h/metrics", "status": "200", "body": "x 1\n"}],
                },
            )
        ],
        None,
        "'readings[0].status'",
    ),
    "stall_text": ([("L", {"t": 1, "late_s": "long"})], None, "'late_s'"),
    "stall_missing": ([("L", {"t": 1})], None, "'late_s'"),
    "stall_negative": ([("L", {"t": 1, "late_s": -3})], None, "'late_s'"),
    "head_a_list": ([("E", [1, 2])], None, "head must be an object"),
    "deep_nesting": ([("E", b'{"t": 1, "x": ' + b"[" * 50 + b"]" * 50 + b"}\n")], None, "nested"),
    "very_deep_nesting": (
        [("E", b'{"t": 1, "x": ' + b"[" * 200000 + b"]" * 200000 + b"}\n")],
        None,
        "nested",
    ),
    "head_not_json": ([("S", b"{not json\n")], None, "not JSON"),
}


@pytest.mark.parametrize("name", sorted(BAD_RECORDINGS))
def test_a_crafted_recording_is_one_error_naming_file_record_and_field(
    tmp_path: Path, name: str
) -> None:
    records, header, field = BAD_RECORDINGS[name]
    path = craft(tmp_path / f"{name}.fabrec", records, header)
    with pytest.raises(RecordError) as e:
        Replay(path)  # what `replay`, `replay --info`, `diff x.fabrec@T` and the screen load
    msg = str(e.value)
    assert msg.startswith(f"{path}: record ") and field in msg and "\n" not in msg, msg
    with pytest.raises(DiffError, match=f"^{path}: record "):
        load_point(f"{path}@1")


def test_the_cli_says_one_line_and_exits_2_for_crafted_recordings(tmp_path: Path) -> None:
    bad = craft(
        tmp_path / "bad.fabrec", [("S", {"t": 1, "host": "n1", "state": "up", "rtt_s": [1]})]
    )
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps({"schema": "fabtop.snapshot/1", "hosts": []}))
    for args in (
        ["replay", "--info", str(bad)],
        ["replay", "--findings", str(bad)],
        ["replay", str(bad)],
        ["diff", f"{bad}@1", str(snap)],
    ):
        one_line_error(fabtop(*args, timeout=30), str(bad), "record 1 (status)", "'rtt_s'")


BAD_SNAPSHOTS: dict[str, tuple[Any, str]] = {
    "hosts_not_a_list": ({"hosts": {"n1": {}}}, "field 'hosts'"),
    "host_a_string": ({"hosts": ["n1"]}, "field 'hosts[0]'"),
    "host_without_name": ({"hosts": [{"links": []}]}, "field 'hosts[0].name'"),
    "links_an_object": ({"hosts": [{"name": "n1", "links": {"a": 1}}]}, "'hosts[0].links'"),
    "link_without_id": (
        {"hosts": [{"name": "n1", "links": [{"metrics": {}}]}]},
        "'hosts[0].links[0].id'",
    ),
    "priority_key_x": (
        {"hosts": [{"name": "n1", "links": [{"id": "l", "metrics": {"rx_pause": {"x": 1}}}]}]},
        "priority 'x'",
    ),
    "metric_text": (
        {"hosts": [{"name": "n1", "links": [{"id": "l", "metrics": {"rx_bytes": "12"}}]}]},
        "'hosts[0].links[0].metrics.rx_bytes'",
    ),
    "clock_text": ({"hosts": [{"name": "n1", "clock_ns": "now"}]}, "'hosts[0].clock_ns'"),
    "deep_nesting": ({"hosts": [{"name": "n1", "x": json.loads("[" * 60 + "]" * 60)}]}, "nested"),
}


@pytest.mark.parametrize("name", sorted(BAD_SNAPSHOTS))
def test_a_malformed_snapshot_is_one_error_naming_file_and_field(tmp_path: Path, name: str) -> None:
    body, field = BAD_SNAPSHOTS[name]
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps({"schema": "fabtop.snapshot/1", **body}))
    with pytest.raises(DiffError) as e:
        diff_command(str(p), str(p))
    assert str(e.value).startswith(f"{p}: ") and field in str(e.value), str(e.value)


def test_the_cli_diff_says_one_line_for_malformed_and_very_deep_snapshots(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"schema": "fabtop.snapshot/1", "hosts": []}))
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "schema": "fabtop.snapshot/1",
                "hosts": [
                    {"name": "n1", "links": [{"id": "l", "metrics": {"rx_pause": {"x": 1}}}]}
                ],
            }
        )
    )
    one_line_error(fabtop("diff", str(good), str(bad)), str(bad), "priority 'x'")
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema": "fabtop.snapshot/1", "hosts": ' + "[" * 100000 + "]" * 100000 + "}")
    one_line_error(fabtop("diff", str(deep), str(good)), str(deep), "nested")
    nan = tmp_path / "nan.json"
    nan.write_text('{"schema": "fabtop.snapshot/1", "hosts": [{"name": "n1", "clock_ns": NaN}]}')
    one_line_error(fabtop("diff", str(nan), str(good)), str(nan), "NaN")


def _bomb_record(z: Any) -> bytes:
    """A frame record that inflates past the reader's bound (MAX_PAYLOAD_BYTES)."""
    bomb = bytearray(z.compress(b'{"t": 1, "host": "n1"}\n'))
    zeros = bytes(1 << 24)
    for _ in range(64):
        bomb += z.compress(zeros)
    bomb += z.flush(zlib.Z_SYNC_FLUSH)
    return b"F" + len(bomb).to_bytes(4, "big") + zlib.crc32(bomb).to_bytes(4, "big") + bomb


@pytest.mark.parametrize("damage", ["expands", "torn", "no_end"])
def test_a_damaged_recording_is_read_as_far_as_it_goes_and_exits_non_zero(
    tmp_path: Path, damage: str
) -> None:
    """As `gzip -t` does: what could be read is shown, and the exit status says damaged."""
    z = zlib.compressobj(6)
    out = bytearray(MAGIC)
    for kind, head in (
        ("H", {"schema": "fabtop.rec/1", "config": GOOD_CONFIG}),
        ("S", {"t": 0.5, "host": "n1", "state": "up"}),
    ):
        stored = z.compress(json.dumps(head).encode() + b"\n") + z.flush(zlib.Z_SYNC_FLUSH)
        out += (
            kind.encode()
            + len(stored).to_bytes(4, "big")
            + zlib.crc32(stored).to_bytes(4, "big")
            + stored
        )
    if damage == "expands":
        out += _bomb_record(z)
    elif damage == "torn":
        out += b"F\x00\x00\x01"  # a record header cut short
    path = tmp_path / f"{damage}.fabrec"
    path.write_bytes(bytes(out))
    for args in (["replay", "--info", str(path)], ["replay", "--findings", str(path)]):
        run = fabtop(*args)
        assert run.returncode == 1, (args, run.returncode, run.stderr[-500:])
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in run.stderr
    assert "hosts" in fabtop("replay", "--info", str(path)).stdout  # what was read is shown


def test_a_clean_recording_exits_0(tmp_path: Path) -> None:
    path = craft(
        tmp_path / "ok.fabrec",
        [
            ("S", {"t": 0.5, "host": "n1", "state": "up"}),
            ("E", {"t": 1.0}),
            ("Z", {"t": 1.0, "frames": 0, "reason": "stopped"}),
        ],
    )
    for args in (["replay", "--info", str(path)], ["replay", "--findings", str(path)]):
        run = fabtop(*args)
        assert run.returncode == 0 and run.stderr == "", (args, run.stderr[-500:])


def test_a_decompression_bomb_stops_at_the_bound_in_bounded_memory(tmp_path: Path) -> None:
    # Under 2 MB on disk that inflates to 1 GiB: the reader must stop at the bound, not
    # inflate it. The bomb continues the file's one zlib stream, as a real record would.
    z = zlib.compressobj(6)
    hdr = json.dumps({"schema": "fabtop.rec/1", "config": GOOD_CONFIG}).encode() + b"\n"
    parts = [
        (b"H", z.compress(hdr) + z.flush(zlib.Z_SYNC_FLUSH)),
        (b"E", z.compress(b'{"t": 0.5}\n') + z.flush(zlib.Z_SYNC_FLUSH)),
    ]
    bomb = bytearray(z.compress(b'{"t": 1, "host": "n1"}\n'))
    zeros = bytes(1 << 24)
    for _ in range(64):
        bomb += z.compress(zeros)
    bomb += z.flush(zlib.Z_SYNC_FLUSH)
    parts.append((b"F", bytes(bomb)))
    data = MAGIC + b"".join(
        k + len(s).to_bytes(4, "big") + zlib.crc32(s).to_bytes(4, "big") + s for k, s in parts
    )
    path = tmp_path / "bomb.fabrec"
    path.write_bytes(data)
    assert path.stat().st_size < 2 * 2**20
    # The peak is read from VmHWM after resetting it: ru_maxrss of a child starts at its
    # parent's size when forked (a pytest process deep into the suite holds ~450 MiB).
    code = (
        "import re\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "from fabtop.run.record import RecordingReader\n"
        f"r = RecordingReader(__import__('pathlib').Path({str(path)!r}))\n"
        "kinds = [x.kind for x in r.records()]\n"
        "print(kinds, r.torn)\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
        "print(int(hwm.group(1)) // 1024)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    listing, peak_mib = run.stdout.strip().splitlines()
    assert listing.startswith("['E']") and "expands to more than" in listing
    # The bound is MAX_PAYLOAD_BYTES; without it the reader held the whole GiB.
    assert int(peak_mib) < 150 + 2 * MAX_PAYLOAD_BYTES // 2**20, peak_mib


# Every string loaded from a recording or a snapshot: hostile text, whole C0/C1 range ---

CONTROLS = [chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))] + [
    "\u202e",
    "\u2066",
    "\x1b]52;c;cGF5bG9hZA==\x07",
    "\x1b]0;pwned\x1b\\",
    "\x1b[31m",
    "\x9b2J",
]
hostile_text = st.lists(st.sampled_from(CONTROLS), min_size=1, max_size=6).map(
    lambda cs: "n" + "".join(cs) + "x"
)

# Raw text that is not a name: the parser it feeds cleans what it takes from it.
RAW_FIELDS = {(MetricsReading, "body"), (Record, "body")}
RAW_KEYS = {"body"}  # the same text inside a metrics record's head
# Not in a recording at all: the operator's own files, and the target kept as one string.
# (A replay tests nothing: fabtop test's rails are not recorded.)
NOT_RECORDED = {
    (Config, "known_hosts"),
    (Config, "ssh_config"),
    (SshTarget, "user"),
    (HostConfig, "rails"),
}


def _unoptional(tp: Any) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return (
        args[0]
        if typing.get_origin(tp) in (typing.Union, getattr(__import__("types"), "UnionType", None))
        and args
        else tp
    )


def hostile(tp: Any, s: str) -> Any:
    """A value of type ``tp`` with ``s`` in every string it has room for (from the annotations)."""
    tp = _unoptional(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return s
    if tp is bool:
        return False
    if tp is int:
        return 1
    if tp is float:
        return 1.0
    if is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: hostile(hints[f.name], s) for f in fields(tp) if f.init})
    if origin in (tuple, list, set, frozenset, deque):
        item = hostile(args[0], s) if args else s
        return origin([item]) if origin is not tuple else (item,)
    if origin is dict:
        return {hostile(args[0], s): hostile(args[1], s)}
    return None  # an alias or union of numbers (MetricValue): not a string


def strings(obj: Any, seen: set[int] | None = None) -> Iterator[tuple[str, str]]:
    """Every (where, string) reachable from ``obj`` through dataclass fields and containers."""
    seen = seen if seen is not None else set()
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, str):
        yield "", obj
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            if (type(obj), f.name) in RAW_FIELDS:
                continue
            for where, s in strings(getattr(obj, f.name), seen):
                yield f"{type(obj).__name__}.{f.name}{where}", s
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from ((f"[{k!r}]", s) for _, s in strings(k, seen))
            if k in RAW_KEYS:
                continue
            yield from ((f"[{k!r}]{w}", s) for w, s in strings(v, seen))
    elif isinstance(obj, list | tuple | set | frozenset | deque):
        for i, v in enumerate(obj):
            yield from ((f"[{i}]{w}", s) for w, s in strings(v, seen))


def str_fields(cls: type) -> list[str]:
    """The fields of ``cls`` that hold text (str, str | None, tuple[str, ...], ...)."""
    hints = typing.get_type_hints(cls)
    return [
        f.name
        for f in fields(cls)
        if "str" in str(hints[f.name]) and (cls, f.name) not in RAW_FIELDS
    ]


def _recorded(tmp: Path, s: str) -> Path:
    host = hostile(HostConfig, s)
    cfg = Config(hosts=[host], interval=1.0, source=s, thresholds={s: 1.0})
    path = tmp / "hostile.fabrec"
    rec = Recorder(path, cfg).open()
    rec.status(host.name, "down", s, None)
    rec.metrics(host.name, [hostile(MetricsReading, s)])
    rec.evaluated()
    rec.close(s)
    return path


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(s=hostile_text)
def test_every_string_loaded_from_a_recording_is_clean(tmp_path: Path, s: str) -> None:
    path = _recorded(tmp_path, s)
    reader = RecordingReader(path)
    records = list(reader.records())
    cfg = reader.config()
    readings = [r for rec in records if rec.kind == "M" for r in metrics_readings(rec)]
    rp = Replay(path)
    rp.advance_to(rp.duration)
    hs = next(iter(rp.state.hosts.values()))
    loaded: dict[type, list[Any]] = {
        Record: records,
        Config: [cfg],
        HostConfig: cfg.hosts,
        SshTarget: [h.ssh for h in cfg.hosts],
        MetricsReading: readings,
        HostState: [hs],
    }
    for cls, objs in loaded.items():
        assert objs, cls
        for obj in objs:
            for name in str_fields(cls):
                value = getattr(obj, name)
                if cls is HostState or (cls, name) in NOT_RECORDED:
                    continue  # HostState: what the state made of them, checked below
                assert value, (cls.__name__, name, "the hostile text never reached it")
            bad = [(w, t) for w, t in strings(obj) if has_control(t)]
            assert not bad, (cls.__name__, bad)
    assert hs.error and hs.target and list(hs.warnings)  # the state's strings came from it
    for where, t in strings(summary(path)):
        assert not has_control(t), (where, t)


def _hostile_snapshot(tmp: Path, s: str, name: str, value: int) -> Path:
    link = hostile(LinkSample, s)
    link.metrics = {"rx_bytes": value, "rx_pause": {3: value}, s: value}
    link.pcie = hostile(PcieLink, s)
    state = FabricState([HostConfig(name="n1")])
    from collectors.samples import HostSample
    from fabtop.core.state import UP

    hs = state.hosts["n1"]
    hs.sample = HostSample(
        host="n1",
        seq=1,
        clock_ns=value * 10**9,
        uptime_s=1.0,
        links={link.id: link},
        gpus=[hostile(GpuSample, s)],
        inference=[hostile(InferenceSample, s)],
        warnings=[s],
    )
    hs.status, hs.target, hs.error = UP, s, s
    hs.warnings.append(s)
    doc = snapshot.build(state, 1.0)
    doc["hosts"][0]["name"] = s  # the name a crafted (or renamed) file carries
    p = tmp / name
    p.write_text(json.dumps(doc))
    return p


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(s=hostile_text)
def test_every_string_loaded_from_a_snapshot_is_clean(tmp_path: Path, s: str) -> None:
    a = _hostile_snapshot(tmp_path, s, "a.json", 10)
    b = _hostile_snapshot(tmp_path, s, "b.json", 25)
    assert has_control(a.read_text(encoding="utf-8").encode().decode("unicode_escape"))
    doc = load_point(str(a))
    bad = [(w, t) for w, t in strings(doc) if has_control(t)]
    assert not bad, bad
    from fabtop.commands.diff import diff_docs, missing_data

    rows = diff_docs(load_point(str(a)), load_point(str(b)))
    assert rows, "the hostile names must still be compared"
    missing, _ = missing_data(doc, {"hosts": []}, str(a), str(b))
    for cls, objs in ((DeltaRow, rows), (NoData, missing)):
        for obj in objs:
            for name in str_fields(cls):
                assert getattr(obj, name), (cls.__name__, name)
            assert not [t for _, t in strings(obj) if has_control(t)], obj
    for as_json in (False, True):
        out = diff_command(str(a), str(b), as_json=as_json)
        assert not has_control(out.replace("\n", "")) and "\\u001b" not in out
