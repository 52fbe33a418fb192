"""A server with no token counter (exo, mlx_lm): its rate is unknown everywhere, never 0.

Neither the rate engine nor the token-drop rule computes anything from such a reading,
even when a body carries numbers that look like counters; coverage (doctor, the host
detail) names the server and why.
"""

from __future__ import annotations

from dataclasses import replace

from collectors.parsers.exo_state import RATE_UNKNOWN as EXO_WHY
from collectors.parsers.mlx_lm import RATE_UNKNOWN as MLX_WHY
from collectors.samples import InferenceSample
from collectors.vocabulary import InferenceRate
from fabtop.core.coverage import host_gaps
from tests.unit.rules_support import Fabric, by_rule

EXO = "http://127.0.0.1:52415/state"
VLLM = "http://127.0.0.1:8000/metrics"


def _exo(total: float) -> InferenceSample:
    # A reading that (wrongly) carries a counter: it must still never become a rate.
    return InferenceSample(
        EXO,
        server="exo",
        rate_unknown=EXO_WHY,
        generated_tokens_total=total,
        prompt_tokens_total=total,
    )


def test_no_rate_is_computed_for_a_server_without_a_counter() -> None:
    fab = Fabric()
    fab.port("node1").traffic(60)
    for i in range(5):
        fab.inference["node1"] = [
            _exo(1000.0 * i),
            InferenceSample(VLLM, server="vllm", generated_tokens_total=500.0 * i),
        ]
        fab.tick()
    rates = fab.hosts["node1"].rates
    assert rates is not None
    assert set(rates.inference[EXO].values()) == {None}  # unknown, not 0 and not 1000
    assert rates.inference[VLLM][InferenceRate.GENERATED_TOKENS_PER_S] == 500.0
    series = fab.history.get(("node1", EXO, InferenceRate.GENERATED_TOKENS_PER_S))
    assert series is None or not [v for v in series.points(60.0)[1] if v is not None]


def test_token_drop_never_fires_on_an_unknown_rate() -> None:
    fab = Fabric()
    p3 = fab.port("node3").traffic(60)
    fab.port("node1").traffic(60)
    total = 0.0
    for _ in range(10):
        total += 2400.0
        fab.inference["node1"] = [_exo(total)]
        fab.tick()
    # A storm, and the (pretended) counter nearly stops: no rate, so no drop to report.
    p3.traffic(0).set(tx_pause_us={3: 998_000.0}, tx_pause={3: 6000.0})
    for _ in range(4):
        total += 100.0
        fab.inference["node1"] = [_exo(total)]
        fab.tick()
    assert by_rule(fab.findings, "pfc_storm")
    assert not by_rule(fab.findings, "token_drop")


def test_the_same_counters_without_the_mark_would_be_rates() -> None:
    """The checks above can fail: an unmarked reading of the same numbers gives a rate."""
    fab = Fabric()
    fab.port("node1").traffic(60)
    for i in range(3):
        fab.inference["node1"] = [replace(_exo(1000.0 * i), rate_unknown=None)]
        fab.tick()
    rates = fab.hosts["node1"].rates
    assert rates is not None
    assert rates.inference[EXO][InferenceRate.GENERATED_TOKENS_PER_S] == 1000.0


def test_coverage_names_the_server_and_the_reason() -> None:
    fab = Fabric()
    fab.port("node1").traffic(60)
    fab.inference["node1"] = [
        InferenceSample(EXO, server="exo", rate_unknown=EXO_WHY),
        InferenceSample("http://127.0.0.1:8080/v1/models", server="mlx_lm", rate_unknown=MLX_WHY),
    ]
    fab.tick()
    from fabtop.core.state import HostState

    hs = HostState("node1", "node1")
    hs.sample = fab.hosts["node1"].sample
    gaps = host_gaps(hs)
    assert f"token rate unknown on node1 ({EXO_WHY})" in gaps
    assert f"token rate unknown on node1 ({MLX_WHY})" in gaps
    assert EXO_WHY.startswith("exo ") and MLX_WHY.startswith("mlx_lm.server ")
    assert not any("0 tok/s" in g for g in gaps)


def test_snapshot_says_why_the_rates_are_null() -> None:
    import json
    from pathlib import Path

    from collectors.parsers.exo_state import parse_exo_state
    from fabtop.run.snapshot import inference_entry

    body = (
        Path(__file__).resolve().parents[1]
        / "fixtures"
        / "inference"
        / "exo_state_two_studios_documented.json"
    ).read_text()
    entry = inference_entry(parse_exo_state(body, EXO), {})
    assert entry["generated_tokens_per_s"] is None and entry["rate_unknown"] == EXO_WHY
    runners = entry["cluster"]["instances"][0]["runners"]
    assert [(r["start_layer"], r["end_layer"]) for r in runners] == [(0, 40), (40, 80)]
    json.dumps(entry)  # plain data all the way down


def test_a_recorded_reading_replays_by_its_path() -> None:
    """Recordings keep the raw body; replay reads /state as exo, /v1/models as mlx_lm."""
    from pathlib import Path

    from fabtop.run.session import MetricsReading, inference_sample

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "inference"
    exo = inference_sample(
        MetricsReading(EXO, 200, (fix / "exo_state_two_studios_documented.json").read_text()),
        f"n1: {EXO}",
    )
    mlx_url = "http://127.0.0.1:8080/v1/models"
    mlx = inference_sample(
        MetricsReading(mlx_url, 200, (fix / "mlx_lm_v1_models_documented.json").read_text()),
        f"n1: {mlx_url}",
    )
    assert (exo.server, exo.rate_unknown, exo.cluster is not None) == ("exo", EXO_WHY, True)
    assert (mlx.server, mlx.rate_unknown) == ("mlx_lm", MLX_WHY)
