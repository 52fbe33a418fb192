"""Remote text is cleaned once, where it enters, of everything that is not visible text.

(issue 27, class 9) Control characters and whole escape sequences, and also what draws
nothing but tells two names apart: format characters (zero-width spaces and joiners, the
direction marks, U+FEFF, tag characters), private-use characters and the Hangul fillers.
"""

from __future__ import annotations

import asyncio
import json
import unicodedata

import pytest

from collectors.parsers.inference_page import parse_inference_page
from collectors.runner import HostRunner, HostStatus
from collectors.text import clean, clean_lines, has_control
from collectors.transport.local import LocalTransport
from fabtop.config import HostConfig
from fabtop.core.state import FabricState
from fabtop.run import snapshot

INVISIBLE = [
    "\u200b",
    "\u200c",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u2060",
    "\ufeff",
    "\u00ad",
    "\u202e",
    "\u2066",
    "\U000e0001",
    "\U000e0041",
    "\U000e007f",  # tags
    "\ue000",
    "\U000f0000",
    "\U00100000",  # private use
    "\u115f",
    "\u1160",
    "\u3164",
    "\uffa0",  # Hangul fillers
    "\x00",
    "\x7f",
    "\x85",
]
# ESC and CSI start a sequence, which goes whole: the character after them goes too.
INTRODUCERS = "\x1b\x90\x98\x9b\x9d\x9e\x9f"


@pytest.mark.parametrize("ch", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_an_invisible_character_goes(ch: str) -> None:
    assert clean(f"Qwen{ch}3") == "Qwen3"
    assert clean_lines(f"a{ch}b\nc") == "ab\nc"
    assert has_control(f"x{ch}") and not has_control(clean(f"x{ch}"))


@pytest.mark.parametrize("ch", INTRODUCERS)
def test_an_escape_sequence_goes_whole(ch: str) -> None:
    # (a string command without its terminator runs to the end: all of it goes)
    got = clean(f"a{ch}[31mb")
    assert got.startswith("a") and not has_control(got)


def test_every_format_and_private_use_character_goes() -> None:
    """The whole class, not a list: every Cf, Co and Cc code point of the Basic Plane."""
    for cp in range(0x10000):
        c = chr(cp)
        if unicodedata.category(c) in ("Cf", "Co", "Cc") and c not in "\t" + INTRODUCERS:
            assert clean(f"a{c}b") == "ab", f"U+{cp:04X}"


@pytest.mark.parametrize("text", ["café", "模型 Llama-3.1", "Ünïcödé", "emoji 😀", "a-b_c.d:e"])
def test_visible_text_stays_as_it_is(text: str) -> None:
    assert clean(text) is text and not has_control(text)


def test_spaces_of_other_kinds_become_spaces() -> None:
    assert clean("a\tb\u00a0c\u3000d") == "a b c d"


def test_three_model_names_that_look_alike_are_one_name() -> None:
    """A page naming its model three ways that draw the same: the screen must not show
    three models, nor hide which one a finding is about."""
    names = ["Qwen3-32B", "Qwen3\u200b-32B", "Qwen3-32B\u3164", "Qwen3\U000e0020-32B"]
    models = set()
    for name in names:
        page = f'vllm:generation_tokens_total{{model_name="{name}"}} 5\n'
        models.add(parse_inference_page(page, "http://127.0.0.1:8000/metrics").model)
    assert models == {"Qwen3-32B"}


async def test_a_stderr_tail_with_escape_sequences_is_clean_in_the_snapshot_json() -> None:
    """A login shell that prints OSC 52 (clipboard) and OSC 0 (title) on stderr, then fails:
    the error as the snapshot stores it holds no sequence for `jq -r` to replay."""
    script = (
        r"printf '\033]52;c;ZXZpbAo=\007\033]0;owned\007login \342\200\256nimda\n' >&2;"
        " exit 3\n"
    )
    state = FabricState([HostConfig(name="n1")])
    seen: list[HostStatus] = []

    def status(host: str, st: HostStatus) -> None:
        seen.append(st)
        state.apply_status(host, st.state, st.error, st.rtt_s)

    runner = HostRunner(
        "n1",
        LocalTransport("n1"),
        script,
        [],
        lambda h, f: None,
        status,
        backoff=(30.0,),
        interval=0.1,
    )
    task = asyncio.create_task(runner.run())
    try:
        for _ in range(200):
            if any(s.state == "down" for s in seen):
                break
            await asyncio.sleep(0.02)
    finally:
        runner.stop()
        await asyncio.wait_for(task, 5)
    doc = json.dumps(snapshot.build(state, 1.0))
    error = state.hosts["n1"].error or ""
    assert "status 3" in error and "login" in error, (error, seen)
    assert "\x1b" not in doc and "\\u001b" not in doc and "\\u202e" not in doc
    assert "ZXZpbAo" not in doc and "owned" not in doc  # the sequences' payloads too
