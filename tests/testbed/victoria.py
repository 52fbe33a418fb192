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
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tests.testbed.prometheus import scrape_config, store


def flushed(url: str) -> str:
    """``url`` once what VictoriaMetrics ingested is searchable."""
    with urllib.request.urlopen(f"{url}/internal/force_flush", timeout=5):
        return url


@contextlib.contextmanager
def victoria(tmp: Path, jobs: Mapping[str, Sequence[str]]) -> Iterator[str]:
    """Run VictoriaMetrics scraping ``jobs`` each second; yield its base URL once every
    target is up."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "scrape.yml").write_text(scrape_config(jobs))
    with store(
        "victoria-metrics",
        tmp,
        lambda binary, cfg, port: [
            binary,
            f"-storageDataPath={tmp / 'data'}",
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-promscrape.config={cfg}",
            "-search.latencyOffset=1s",
            "-search.disableCache",
            "-loggerLevel=WARN",
        ],
        sum(len(t) for t in jobs.values()),
        flushed,
    ) as url:
        yield url
