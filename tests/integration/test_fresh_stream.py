"""A stream that can no longer decode some values: said as a finding, then started fresh.

A probe whose values name a schema the collector's decoder does not hold (a table past
its bound, a schema line lost) leaves part of the host unseen. The host must not look
healthy meanwhile (a finding names the sections), and the runner starts the stream again,
fresh on both ends, once: not a failure of the host, so no "down" and no backoff.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from collectors.runner import UNDECODED_FRAMES, HostRunner
from collectors.transport.local import LocalTransport
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.rules.decoding import RULE
from fabtop.core.state import FabricState
from tests.integration.test_runner import Recorder, wait_until

# A stand-in probe in the real wire format whose ethtool values name schema 9, which it
# defines only in the streams after the first one (the file counts the starts).
LOST_SH = """\
n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > "$1"
i=0
while :; do
  i=$((i+1))
  echo "@@fabtop-frame $i $(date +%s%N) 1.00 $(date +%s)"
  if [ "$n" -gt 1 ] && [ "$i" = 1 ]; then
    printf '@@section schema 9 - ok for=ethtool_S\\nrx_bytes\\ntx_bytes\\n'
  fi
  echo "@@section sysnet - - ok"
  echo "eth0/mtu 9000"
  echo "@@section ethtool_S eth0 - ok schema=9"
  echo "$i $i"
  echo "@@end $i"
  sleep 0.05
done
"""


async def test_undecodable_values_are_a_finding_and_the_stream_starts_fresh_once(
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts"
    state = FabricState([HostConfig(name="n1")], rules=make_evaluator(), interval=0.05)
    rec = Recorder()

    def on_frame(host: str, frame: object) -> None:
        rec.on_frame(host, frame)  # type: ignore[arg-type]
        state.apply_frame(host, frame)  # type: ignore[arg-type]
        state.evaluate()

    runner = HostRunner(
        "n1",
        LocalTransport("n1"),
        LOST_SH,
        [str(starts)],
        on_frame,
        rec.on_status,
        backoff=(5.0,),
        interval=0.05,
    )
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: any(f.rule == RULE for f in state.findings), 5, "the finding")
        (f,) = [f for f in state.findings if f.rule == RULE]
        assert f.host == "n1" and "ethtool_S eth0" in f.summary
        await wait_until(
            lambda: starts.exists() and starts.read_text().strip() == "2", 5, "a fresh stream"
        )
        await wait_until(
            lambda: any(
                fr.seq > 3 and fr.find("ethtool_S", "eth0").status == "ok"
                for fr in rec.frames[UNDECODED_FRAMES:]
            ),
            5,
            "values decoded again",
        )
        # Reconnected at once (a 5 s backoff would have kept it down), never "down".
        assert "down" not in rec.states
        fresh = [s for s in rec.statuses if s.state == "connecting"]
        assert fresh and "start it fresh" in (fresh[0].error or "")
        await wait_until(
            lambda: not any(f.rule == RULE for f in state.findings), 5, "the finding cleared"
        )
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    assert starts.read_text().strip() == "2"  # once: no reconnect loop
