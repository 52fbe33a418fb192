"""The bounded memo the parsers keep readings of repeating remote text in."""

from __future__ import annotations

from collectors.memo import Memo


def test_reads_once_and_remembers() -> None:
    calls: list[str] = []

    def read(key: str) -> int:
        calls.append(key)
        return len(key)

    memo = Memo(read, 8, 16)
    assert [memo["ab"], memo["ab"], memo.get("ab")] == [2, 2, 2]
    assert calls == ["ab"]


def test_bounded_in_entries_and_key_size() -> None:
    memo = Memo(len, 4, 8)
    for i in range(10):
        assert memo[f"k{i}"] == 2
        assert len(memo) <= 4
    assert memo["x" * 9] == 9 and "x" * 9 not in memo  # read, not kept
    tuples: Memo[tuple[str, ...], int] = Memo(len, 4, 8)
    assert tuples[("abcd", "efgh")] == 2 and ("abcd", "efgh") in tuples
    assert tuples[("abcd", "efghi")] == 2 and ("abcd", "efghi") not in tuples
