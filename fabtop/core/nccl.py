"""How long NCCL waits on a lost peer before it errors: its InfiniBand/RoCE queue pairs'
timeout and retry count, from its defaults or the config's ``[nccl]`` table.

A reliable-connected queue pair waits ``4.096 µs x 2^timeout`` for an ACK before it sends
again (the InfiniBand spec's local ACK timeout), and gives up after ``retry_cnt`` more
tries: the queue pair goes to the error state and NCCL reports the failure. NCCL sets
``NCCL_IB_TIMEOUT`` (default 20: 4.3 s per try) and ``NCCL_IB_RETRY_CNT`` (default 7:
about 30 s) in the job's environment, which fabtop cannot see: the config says the job's
values, and every report says where its figures came from.
"""

from __future__ import annotations

from dataclasses import dataclass

# NCCL's defaults (src/transport/net_ib.cc: NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 20) and
# NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7)).
DEFAULT_IB_TIMEOUT = 20
DEFAULT_IB_RETRY_CNT = 7
# The fields' own widths: the queue pair's timeout is 5 bits (0 would mean "wait forever",
# which NCCL does not allow: 1..31), its retry count 3 bits (0..7).
IB_TIMEOUT_RANGE = (1, 31)
IB_RETRY_CNT_RANGE = (0, 7)
ACK_TIMEOUT_UNIT_S = 4.096e-6


@dataclass(frozen=True, slots=True)
class NcclTimeouts:
    """A job's ``NCCL_IB_TIMEOUT`` and ``NCCL_IB_RETRY_CNT``, and where they came from."""

    ib_timeout: int = DEFAULT_IB_TIMEOUT
    ib_retry_cnt: int = DEFAULT_IB_RETRY_CNT
    source: str = "NCCL's defaults (fabtop cannot see a job's environment: [nccl] in the config)"

    @property
    def per_try_s(self) -> float:
        """One try's wait for an ACK: ``4.096 µs x 2^ib_timeout`` (4.3 s at 20)."""
        return ACK_TIMEOUT_UNIT_S * float(1 << self.ib_timeout)

    @property
    def qp_error_s(self) -> float:
        """About how long a collective stalls on a lost peer before its queue pair errors:
        ``ib_retry_cnt x per_try_s`` (30 s at 7 and 20; the first try adds one more)."""
        return self.ib_retry_cnt * self.per_try_s

    @property
    def line(self) -> str:
        """``NCCL's stall bound: 4.3 s per try (4.096 µs x 2^20), about 30 s before ...``."""
        return (
            f"NCCL's stall bound: {self.per_try_s:.2g} s per try (4.096 µs x 2^{self.ib_timeout}),"
            f" about {self.qp_error_s:.0f} s before a queue pair errors ({self.ib_retry_cnt} "
            f"retries x {self.per_try_s:.2g} s): {self.source}"
        )
