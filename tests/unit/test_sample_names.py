"""A link's names are one object tick after tick, whichever way its samples came.

The views look every link up by its host and id on every refresh (rows, rates, history,
rails, grid): names of the same text but new objects each tick (a frame laid out anew)
made each of those lookups hash and compare the text again. At 1000 links that was a
quarter of a refresh (issue 32). A Prometheus answer decoded anew kept its names already
(the read-back's label cache); its test holds that, whichever way it is done.
"""

from __future__ import annotations

import json

from collectors.frames import FrameDecoder
from collectors.samples import HostSample, LinkSample
from fabtop.core.pipeline import Pipeline
from fabtop.run.demo import demo_state
from fabtop.run.promself_series import read_own, sample_of
from fabtop.sim import Fabric, SimHostConfig
from tests.unit.test_promself import T0, exposition, stamps

NAMES = ("id", "netdev", "rdma_device", "link_layer", "state")


def _same_names(a: HostSample, b: HostSample) -> list[str]:
    """The names of ``b``'s links that are equal to ``a``'s but another object."""
    assert a.links.keys() == b.links.keys()
    odd = []
    for (ka, la), (kb, lb) in zip(a.links.items(), b.links.items(), strict=True):
        if ka is not kb:
            odd.append(f"{ka} key")
        for f in NAMES:
            va, vb = getattr(la, f), getattr(lb, f)
            assert va == vb, (ka, f)
            if va is not vb:
                odd.append(f"{ka} {f}")
    return odd


def test_names_of_frames_laid_out_anew_are_the_objects_of_the_tick_before() -> None:
    # The simulator's frames without an encoder are the sh probe's: all text, no
    # generation, so each is laid out anew and its names parsed anew.
    fab = Fabric([SimHostConfig(name="n1", roce_ports=2)])
    host = fab.hosts["n1"]
    pipe, decoder = Pipeline(), FrameDecoder()
    got = []
    for t in (1.0, 2.0):
        (frame,) = decoder.feed(host.frame(t).encode())
        sample, rates = pipe.apply_frame("n1", frame)
        assert set(rates.links) == set(sample.links)
        assert all(k is sample.links[k].id for k in rates.links)  # the rates' keys too
        got.append(sample)
    assert len(got[1].links) >= 3  # two RoCE ports and the management port
    assert _same_names(got[0], got[1]) == []


def test_names_read_back_from_prometheus_are_the_objects_of_the_poll_before() -> None:
    state, _, _ = demo_state(until_s=5.0, history_s=5.0)
    results = exposition(state)
    name = next(iter(state.hosts))
    pipe = Pipeline()
    got = []
    for poll in (1, 2):
        # Each answer is decoded anew, as each poll's JSON is.
        answer = json.loads(json.dumps(results))
        own = read_own(answer, stamps(answer, T0 - 3 + poll))
        sample = sample_of(own.hosts[name], poll)
        pipe.apply_sample(sample)
        got.append(sample)
    assert len(got[0].links) >= 3
    assert _same_names(got[0], got[1]) == []


def _sample(seq: int, *names: str) -> HostSample:
    """A host's sample whose links' names are new strings of ``names``' text."""
    s = HostSample(host="n1", seq=seq, clock_ns=seq * 10**9, uptime_s=float(seq))
    for n in names:
        lid = "".join(n)  # a new object of that text, as a parser makes
        s.links[lid] = LinkSample(id=lid, netdev="".join(n), state="".join("up"))
    return s


def test_a_name_gone_is_forgotten_not_kept_for_good() -> None:
    # A week of pod veths: each name's object lives only as long as some sample has it
    # (sys.intern's would live for good on some Pythons).
    pipe = Pipeline()
    first = _sample(1, "eth0", "veth1a")
    pipe.apply_sample(first)
    old = first.links["veth1a"].id
    gone = _sample(2, "eth0")
    pipe.apply_sample(gone)
    assert gone.links["eth0"].id is first.links["eth0"].id
    back = _sample(3, "eth0", "veth1a")
    pipe.apply_sample(back)
    assert back.links["eth0"].id is first.links["eth0"].id
    assert back.links["veth1a"].id == old and back.links["veth1a"].id is not old


def test_a_week_of_pod_veths_leaves_two_rounds_of_names() -> None:
    pipe = Pipeline()
    for seq in range(1, 2001):
        pipe.apply_sample(_sample(seq, "eth0", f"veth{seq:x}"))
    # The last round's: eth0, "up" and the last veth (one host: a round is one sample).
    assert len(pipe.names) == 3
