"""Recording size per host-hour and replay speed, on the demo fabric.

    .venv/bin/python benchmarks/record_replay.py [--sim-seconds 300]

Records the demo (4 simulated hosts, mlx5 RoCE ports, GPUs, inference servers) with the
simulation sped up, then replays the file through the live path (FabricState.apply_frame,
rates, rules) as fast as it goes. The recorder's own CPU per frame (rendering the wire
text, writing it against the host's earlier frames, compressing) is timed apart, on the
recorded frames written again: recording runs beside the dashboard.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabtop.run.compose import fabric_state, open_session
from fabtop.run.demo import demo_config
from fabtop.run.record import FRAME, Recorder, RecordingReader, decode_frame
from fabtop.run.replay import Replay

SPEED = 25.0


async def record(path: Path, sim_seconds: float) -> Recorder:
    cfg = demo_config(1.0)
    state = fabric_state(cfg)
    rec = Recorder(path, cfg).open()
    session = open_session(cfg, state=state, demo_speed=SPEED, events=rec)
    task = asyncio.create_task(session.run())
    await asyncio.sleep(sim_seconds / SPEED)
    await session.stop()
    task.cancel()
    rec.close()
    return rec


def recorder_cpu(path: Path, again: Path) -> float:
    """Microseconds of CPU per frame for ``Recorder.frame`` on the frames of ``path``."""
    reader = RecordingReader(path)
    frames = [(r.host, decode_frame(r)) for r in reader.records() if r.kind == FRAME]
    rec = Recorder(again, reader.config()).open()
    t0 = time.process_time()
    for host, frame in frames:
        if frame is not None:
            rec.frame(host, frame)
    cpu = time.process_time() - t0
    rec.close()
    return cpu / max(len(frames), 1) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-seconds", type=float, default=300.0)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.fabrec"
        asyncio.run(record(path, ns.sim_seconds))
        size = path.stat().st_size
        frames = sum(1 for r in RecordingReader(path).records() if r.kind == FRAME)
        raw = sum(len(r.body) for r in RecordingReader(path).records() if r.kind == FRAME)
        per_frame = size / max(frames, 1)
        print(
            f"recorded {frames} frames ({raw / 1e6:.1f} MB of probe text) "
            f"into {size / 1e6:.2f} MB: {raw / max(size, 1):.1f}x compression"
        )
        print(
            f"size per host-hour at 1 Hz: {per_frame * 3600 / 1e6:.2f} MB "
            f"({per_frame / 1e3:.3f} kB per frame; target <= 1 MB: "
            f"{'met' if per_frame * 3600 <= 1e6 else 'NOT met'})"
        )
        print(f"recorder CPU per frame: {recorder_cpu(path, Path(d) / 'again.fabrec'):.0f} us")
        t0 = time.perf_counter()
        rp = Replay(path)
        rp.advance_to(rp.duration)
        dt = time.perf_counter() - t0
        sim_s = frames / max(len(rp.frames_per_host), 1)
        print(
            f"replay through the live path: {frames / dt:.0f} frames/s, "
            f"{sim_s / dt:.0f}x real time for {len(rp.frames_per_host)} hosts at 1 Hz "
            f"({dt:.2f} s for {sim_s:.0f} host-seconds each)"
        )


if __name__ == "__main__":
    main()
