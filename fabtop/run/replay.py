"""Replay a recording through the live code path: FabricState.apply_frame, rates, rules.

Records are applied in file order, which is the order the live session applied them
(per host that is remote-time order). Rules run where the live session ran them (the
``E`` records), so a replay's findings are the live findings at the same times. The
state's clock is the recording's clock, so host ages on screen are the recorded ones.

Seeking forward applies records up to the new cursor; seeking backward starts a fresh
FabricState and re-feeds from the start: rates then never see a jump backwards, so
no spike and no gap appears that the live run did not have.

The state's finding log (raise and clear, with times) is rebuilt the same way: its times
come from the recorded data (``FabricState.data_now``), so a seek gives the log a
straight read gives. :func:`finding_transitions` lists those raises and clears.

Every record comes through :class:`fabtop.run.record.RecordingReader`, which checks
each head and cleans its strings; applying one record runs behind the same guard as a
live frame, so a record the state cannot use costs that host a warning, never the replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from collectors.guard import Guard
from collectors.lag import LoopLag
from collectors.numbers import finite
from fabtop.core.finding_log import Episode
from fabtop.core.findings import Finding
from fabtop.core.state import FabricState
from fabtop.run.compose import fabric_state
from fabtop.run.record import (
    EVALUATED,
    FRAME,
    METRICS,
    STALLED,
    STATUS,
    Record,
    RecordError,
    RecordingReader,
    decode_frame,
    metrics_readings,
    summary,
)
from fabtop.run.session import inference_sample

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


class Replay:
    """A recording as a source: ``advance_to(t)`` moves the state to recording time ``t``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        info = summary(self.path)  # one pass: duration and how the file ended
        self.duration: float = float(info["duration_s"])
        self.torn: str | None = info["torn"]
        self.frames_per_host: dict[str, int] = info["frames"]
        self.config = RecordingReader(self.path).config()
        self.cursor = 0.0
        self.wall0 = wall_origin(self.path)
        self.on_reset: Callable[[FabricState], None] | None = None
        self.state = self._fresh()
        self._reader = RecordingReader(self.path)
        self._records: Iterator[Record] = self._reader.records()
        self._pending: Record | None = None
        self.applied = 0

    def now(self) -> float:
        """Recording time of the cursor: the clock host ages are measured with."""
        return self.cursor

    def _fresh(self) -> FabricState:
        state = fabric_state(self.config, clock=self.now)
        # The live session ran the rules once per tick; the E records say where.
        state.evaluate_per_frame = False
        state.interval = self.config.interval
        # The operator's wall clock of the live run at the cursor: what the state falls
        # back on before its first frame (a recording of hosts that never answered).
        state.wall = self.wall
        # The live run's own stalls, on the recording's clock (the STALLED records).
        self.lag = LoopLag(clock=self.now)
        state.attach_lag(self.lag)
        return state

    def wall(self) -> float:
        """The live run's wall clock (operator's axis) at the cursor."""
        return self.wall0 + self.cursor

    def _next(self) -> Record | None:
        if self._pending is not None:
            rec, self._pending = self._pending, None
            return rec
        try:
            return next(self._records, None)
        except RecordError as e:
            # The file changed under a running replay (it was read whole at load):
            # the replay stops there and says why, the screen stays up.
            self.torn = str(e)
            self._records = iter(())
            return None

    def advance_to(self, t: float) -> int:
        """Apply every record up to recording time ``t``; return how many were applied."""
        n = 0
        while True:
            rec = self._next()
            if rec is None:
                break
            if rec.t > t:
                self._pending = rec
                break
            # The cursor follows the records, so ages seen by the state match the live run.
            self.cursor = max(self.cursor, rec.t)
            self.apply(rec)
            n += 1
        self.cursor = max(self.cursor, min(t, self.duration))
        self.applied += n
        return n

    def apply(self, rec: Record) -> None:
        """Feed one record into the state exactly as the live session did."""
        guard = Guard(f"{rec.host or 'replay'}: record at {rec.t:.1f} s not applied")
        with guard:
            self._apply(rec)
        if guard.error is not None:
            self.state.warn(rec.host, guard.error)

    def _apply(self, rec: Record) -> None:
        st = self.state
        if rec.kind == FRAME:
            frame = decode_frame(rec)
            if frame is not None:
                # Where the live run placed the frame on the operator's time axis, when the
                # recording kept it; None: no clock estimate from this frame (never "now").
                arrived = rec.head.get("arrived_unix")
                st.apply_frame(rec.host, frame, arrived_unix=arrived)
        elif rec.kind == STATUS:
            rtt = rec.head.get("rtt_s")
            st.apply_status(
                rec.host,
                str(rec.head.get("state", "connecting")),
                rec.head.get("error"),
                float(rtt) if rtt is not None else None,
            )
        elif rec.kind == METRICS:
            readings = [inference_sample(r, f"{rec.host}: {r.url}") for r in metrics_readings(rec)]
            st.apply_inference(rec.host, readings)
        elif rec.kind == EVALUATED:
            st.evaluate()
        elif rec.kind == STALLED:
            self.lag.note(rec.t - float(rec.head["late_s"]), rec.t)

    def seek(self, t: float) -> None:
        """Move the cursor to ``t`` (clamped); backwards re-feeds from the start."""
        t = max(0.0, min(t, self.duration))
        if t < self.cursor:
            self.cursor = 0.0
            self.state = self._fresh()
            self._reader = RecordingReader(self.path)
            self._records = self._reader.records()
            self._pending = None
            self.applied = 0
            if self.on_reset is not None:
                self.on_reset(self.state)
        self.advance_to(t)

    @property
    def at_end(self) -> bool:
        """Every record has been applied."""
        return self.cursor >= self.duration and self._pending is None


def replay_findings(path: str | Path) -> list[tuple[float, Finding]]:
    """Every finding present after each rules run of the recording, with its recording time."""
    rp = Replay(path)
    out: list[tuple[float, Finding]] = []
    rp.state.evaluate_per_frame = False
    for rec in RecordingReader(rp.path).records():
        rp.cursor = max(rp.cursor, rec.t)
        rp.apply(rec)
        if rec.kind in (EVALUATED, STATUS):
            out.extend((rec.t, f) for f in rp.state.findings)
    return out


def wall_origin(path: str | Path) -> float:
    """The operator-axis time of the recording's t=0, from its first frame's arrival.

    The demo stamps arrivals on its own calendar, so the header's ``started_unix`` (the
    recorder's wall clock) is only the fallback, for a recording without arrival times.
    """
    reader = RecordingReader(Path(path))
    try:
        for rec in reader.records():
            if rec.kind == FRAME:
                arrived = finite(rec.head.get("arrived_unix"))
                if arrived is not None:
                    return arrived - rec.t
                break
    except RecordError:
        pass
    started = finite(reader.header.get("started_unix"))
    return started if started is not None else 0.0


def finding_transitions(
    path: str | Path, torn: list[str] | None = None
) -> Iterator[tuple[float, str, Finding]]:
    """Each raise and clear of the recording: (seconds from its start, "raised"|"cleared",
    the finding), in order, as the live run's rules saw them (``replay --findings``).

    The time is the record at which fabtop raised or cleared it; the finding's own
    ``since`` says when its condition began. ``torn`` gets why the reading stopped before
    the recording's end, when it did (a damaged file).
    """
    rp = Replay(path)
    pending: list[tuple[str, Episode]] = []
    rp.state.finding_log.on_transition = lambda kind, ep: pending.append((kind, ep))
    reader = RecordingReader(rp.path)
    for rec in reader.records():
        rp.cursor = max(rp.cursor, rec.t)
        rp.apply(rec)
        for kind, ep in pending:
            yield rec.t, kind, ep.shown
        pending.clear()
    if reader.torn and torn is not None:
        torn.append(reader.torn)


def state_at(path: str | Path, t: float) -> FabricState:
    """The FabricState a replay holds at recording time ``t`` (for ``diff run.fabrec@T``)."""
    rp = Replay(path)
    rp.advance_to(t)
    return rp.state
