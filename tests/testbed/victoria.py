"""A real VictoriaMetrics (single-node, Debian's ``victoria-metrics``) for the tests: its
own ``-storageDataPath``, ``-httpListenAddr`` on a free loopback port, scraping the given
jobs each second with the same scrape config as tests/testbed/prometheus.py; ended when
the block ends.

``-search.latencyOffset`` (30 s by default) hides samples younger than that from queries
at "now": here 1 s, so a test waits for one scrape, not half a minute (docs/PROMETHEUS.md
says what a reader of a default VictoriaMetrics sees). Scraped samples become searchable
when VictoriaMetrics flushes them (about 10 s after its start here): :func:`flushed` asks
for that at once (``/internal/force_flush``, meant for tests) before a query.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tests.conftest import skip_or_fail
from tests.integration.sshd import free_port
from tests.testbed.prometheus import query, scrape_config, wait_for


def flushed(url: str) -> str:
    """``url`` once what VictoriaMetrics ingested is searchable."""
    with urllib.request.urlopen(f"{url}/internal/force_flush", timeout=5):
        return url


@contextlib.contextmanager
def victoria(tmp: Path, jobs: Mapping[str, Sequence[str]]) -> Iterator[str]:
    """Run VictoriaMetrics scraping ``jobs`` each second; yield its base URL once every
    target is up."""
    binary = shutil.which("victoria-metrics")
    if binary is None:
        skip_or_fail("victoria-metrics not installed (apt-get install victoria-metrics)")
        raise AssertionError  # unreachable: skip_or_fail raises
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = tmp / "scrape.yml"
    cfg.write_text(scrape_config(jobs))
    port = free_port()
    with contextlib.ExitStack() as stack:
        log = stack.enter_context((tmp / "victoria.log").open("wb"))
        proc = subprocess.Popen(
            [
                binary,
                f"-storageDataPath={tmp / 'data'}",
                f"-httpListenAddr=127.0.0.1:{port}",
                f"-promscrape.config={cfg}",
                "-search.latencyOffset=1s",
                "-search.disableCache",
                "-loggerLevel=WARN",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(proc.wait, 20)
        stack.callback(proc.terminate)
        url = f"http://127.0.0.1:{port}"
        want = sum(len(t) for t in jobs.values())
        wait_for(
            f"VictoriaMetrics: {want} targets up",
            lambda: sum(r["value"][1] == "1" for r in query(flushed(url), "up")) >= want,  # type: ignore[index]
        )
        yield url
