"""A real Prometheus for the tests: started on a free loopback port with its own data
directory, scraping the given jobs every second; ended when the block ends.

Waits here are for Prometheus's scrapes (real time by nature), never for simulated time.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from tests.conftest import skip_or_fail
from tests.integration.sshd import free_port


def query(url: str, q: str, at: float | None = None) -> list[dict[str, object]]:
    """An instant query's result vector (``at``: unix seconds, else now)."""
    args = {"query": q} | ({} if at is None else {"time": str(at)})
    with urllib.request.urlopen(
        f"{url}/api/v1/query?" + urllib.parse.urlencode(args), timeout=5
    ) as r:
        result: list[dict[str, object]] = json.load(r)["data"]["result"]
    return result


def wait_for(what: str, ok: Callable[[], bool], within: float = 60.0) -> None:
    """Poll ``ok`` until it holds; fail naming ``what`` after ``within`` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        with contextlib.suppress(OSError, ValueError, KeyError):
            if ok():
                return
        time.sleep(0.2)
    raise AssertionError(f"Prometheus: {what} within {within:.0f} s")


def scrape_config(jobs: Mapping[str, Sequence[str]], interval: str = "1s") -> str:
    """A prometheus.yml scraping each job's targets every ``interval``."""
    return (
        f"global: {{scrape_interval: {interval}, scrape_timeout: {interval}}}\n"
        "scrape_configs:\n"
        + "".join(
            f"  - job_name: {job}\n    honor_labels: true\n"
            f"    static_configs: [{{targets: {json.dumps(list(t))}}}]\n"
            for job, t in jobs.items()
        )
    )


@contextlib.contextmanager
def store(
    tool: str,
    tmp: Path,
    args: Callable[[str, Path, int], list[str]],
    want: int,
    url_of: Callable[[str], str] = lambda url: url,
) -> Iterator[str]:
    """Run a metrics store (``tool``, a Debian package's binary of that name) on a free
    loopback port; yield its base URL once ``want`` targets are up. ``args(binary, cfg,
    port)``: its command line, ``cfg`` the scrape config it is to read (written by the
    caller); ``url_of``: the URL to query for ``up`` (a store that must flush first)."""
    binary = shutil.which(tool)
    if binary is None:
        skip_or_fail(f"{tool} not installed (apt-get install {tool})")
        raise AssertionError  # unreachable: skip_or_fail raises
    port = free_port()
    with contextlib.ExitStack() as stack:
        log = stack.enter_context((tmp / f"{tool}.log").open("wb"))
        proc = subprocess.Popen(
            args(binary, tmp / "scrape.yml", port), stdout=log, stderr=subprocess.STDOUT
        )
        stack.callback(proc.wait, 20)
        stack.callback(proc.terminate)
        url = f"http://127.0.0.1:{port}"
        wait_for(
            f"{tool}: {want} targets up",
            lambda: sum(r["value"][1] == "1" for r in query(url_of(url), "up")) >= want,  # type: ignore[index]
        )
        yield url


@contextlib.contextmanager
def prometheus(
    tmp: Path,
    jobs: Mapping[str, Sequence[str]],
    *,
    data: Path | None = None,
    up: int | None = None,
) -> Iterator[str]:
    """Run Prometheus scraping ``jobs`` each second; yield its base URL.

    ``data``: a TSDB directory to start from (backfilled blocks: history made without
    waiting). ``up``: wait until that many targets are up (default: all of them).
    """
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "scrape.yml").write_text(scrape_config(jobs))
    want = sum(len(t) for t in jobs.values()) if up is None else up
    with store(
        "prometheus",
        tmp,
        lambda binary, cfg, port: [
            binary,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={data or tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=30d",
        ],
        want,
    ) as url:
        yield url
