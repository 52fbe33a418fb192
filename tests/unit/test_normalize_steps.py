"""step_value gives, step by step, what apply_plan gives for the whole plan
(collectors/normalize.py), sums beyond 64 bits included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.normalize import (
    ETHTOOL_MAP,
    IB_HW_MAP,
    IB_PORT_MAP,
    NETDEV_MAP,
    apply_plan,
    metric_plan,
    step_names,
    step_value,
)
from collectors.numbers import U64_MAX

_TABLES = [
    (ETHTOOL_MAP, "mlx5_core"),
    (ETHTOOL_MAP, "bnxt_en"),
    (ETHTOOL_MAP, None),
    (IB_PORT_MAP, None),
    (IB_HW_MAP, None),
    (NETDEV_MAP, None),
]
_NAMES = sorted(
    {
        n.format(p=p)
        for table, _ in _TABLES
        for srcs in table.values()
        for src in srcs
        for n in src.names
        for p in range(8)
    }
)
_VALUE = st.one_of(st.integers(0, 2**20), st.integers(U64_MAX // 4, U64_MAX))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_TABLES), st.dictionaries(st.sampled_from(_NAMES), _VALUE))
def test_each_step_gives_what_the_plan_gives(table: tuple, counters: dict[str, int]) -> None:
    plan = metric_plan(table[0], counters, table[1])
    steps = {}
    for step in plan:
        assert set(step_names(step)) <= counters.keys()
        v = step_value(step, counters)
        if v is not None:
            steps[step[0]] = v
    assert steps == apply_plan(plan, counters)
