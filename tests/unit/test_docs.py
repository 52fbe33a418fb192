"""The README and docs/ as a reader follows them: every link lands, and the tables that
copy a fact from the code say what the code says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from fabtop.commands.cli import parse
from fabtop.core.thresholds import DEFAULT_THRESHOLDS
from fabtop.core.thresholds import __doc__ as thresholds_doc
from tests.conftest import REPO

DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
# [text](target) outside code spans; images too (their target is a file as well).
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(text: str) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces to '-'."""
    out: set[str] = set()
    for line in FENCE.sub("", text).splitlines():
        if m := re.match(r"#{1,6} (.+)", line):
            slug = re.sub(r"[^\w\- ]", "", m[1].strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


def links(text: str) -> list[str]:
    body = FENCE.sub("", text)
    body = re.sub(r"`[^`\n]*`", "", body)  # a link in a code span is text, not a link
    return LINK.findall(body)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_in_the_docs_lands(doc: Path) -> None:
    bad = []
    for target in links(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:: not this checkout's to check
        path, _, anchor = target.partition("#")
        where = (doc.parent / path).resolve() if path else doc
        if not where.exists():
            bad.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where.read_text()):
            bad.append(f"{target}: no heading '{anchor}' in {where.name}")
    assert bad == [], f"{doc.name}: {bad}"


def test_the_link_check_sees_a_broken_link_and_a_wrong_anchor(tmp_path: Path) -> None:
    text = "# Top\n\n## A `b` c\n\n[x](#a-b-c) [y](#nope) `[z](gone.md)` [w](gone.md)\n"
    assert "a-b-c" in anchors(text) and "top" in anchors(text)
    assert links(text) == ["#a-b-c", "#nope", "gone.md"]


def test_the_thresholds_table_is_the_codes_table() -> None:
    # The rules' reasons live in fabtop/core/thresholds.py; the doc a user reads shows them
    # as they are there, every one (fabtop test's marks are docs/TEST.md's).
    assert thresholds_doc is not None
    code = [
        ln.replace("``", "`")
        for ln in thresholds_doc.splitlines()
        if ln.startswith("| ``") and not ln.startswith("| ``test_")
    ]
    doc = (REPO / "docs" / "DIAGNOSING.md").read_text().splitlines()
    table = [ln for ln in doc if ln.startswith("| `")]
    assert table == code
    assert len(code) == len([n for n in DEFAULT_THRESHOLDS if not n.startswith("test_")])


def test_the_readme_names_no_second_list_of_test_packages() -> None:
    # The packages the tests need are what .ci/run installs; a list in the README drifts.
    readme = (REPO / "README.md").read_text()
    tests = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    assert "`.ci/run`" in tests
    for package in ("sockperf", "nftables", "iperf3", "busybox", "prometheus"):
        assert package not in tests, package


def shell_lines(text: str) -> list[str]:
    """The lines of the sh (or unmarked) code blocks: what a reader pastes."""
    lang: str | None = None
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            lang = line[3:].strip() if lang is None else None
        elif lang in ("sh", "console", "bash", ""):
            out.append(line)
    return out


COMMAND_LINES = [
    (doc.name, m[1])
    for doc in DOCS
    for line in shell_lines(doc.read_text())
    if (m := re.match(r"\s*(?:sudo )?(?:\.venv/bin/)?fabtop((?: .*)?)$", line))
]


def refused(words: list[str]) -> bool:
    try:
        parse(words)
    except SystemExit as e:
        return e.code not in (0, None)
    return False


@pytest.mark.parametrize(("doc", "line"), COMMAND_LINES)
def test_every_command_line_the_docs_show_parses(
    doc: str, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # An example a reader pastes must be accepted: an option moved or renamed (or one a
    # command never took, like record --from-prometheus) fails here, not at 3 a.m.
    assert not refused(shlex.split(line.split(" #")[0])), capsys.readouterr().err


def test_the_command_line_check_sees_an_option_a_command_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert len(COMMAND_LINES) > 20  # the README's and docs' examples were found
    assert refused(["record", "--from-prometheus", "http://prometheus:9090", "-o", "x"])
    assert "unrecognized arguments: --from-prometheus" in capsys.readouterr().err
