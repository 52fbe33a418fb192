"""The health rules' thresholds: one place for each value, its default and why.

The rules fire at these values and the views colour by them: both read the effective
mapping (defaults with the config's ``[thresholds]`` over them) from the fabric state.
A few are the views' alone (``pause_hot_ratio``, ``line_busy_ratio``): they mark what is
worth a look before any rule has a finding to give.

Thresholds (override any of them in the config file's ``[thresholds]`` table):

| name | default | why |
|---|---|---|
| ``detect_s`` | 2 | a condition must hold two 1 s intervals: one odd sample never fires, and every rule still fires within 2 ticks |
| ``restore_s`` | 4 | twice the detection time, so a flickering condition stays one finding instead of a string of them |
| ``event_hold_s`` | 120 | link flaps and NIC watchdog events last milliseconds; keep them on screen long enough for someone to see |
| ``storm_pause_ratio`` | 0.99 | pfcwd-style: paused for 99% of an interval means the queue did not drain at all; healthy lossless traffic, even under incast, pauses a few % to a few tens of % |
| ``storm_flat_fraction`` | 0.02 | "flat" traffic: the stormed priority moved under 2% of line rate (a port paused 99% of the time can move at most about 1%) |
| ``storm_flat_bytes_per_s`` | 1e6 | the same "flat" when the link does not report its speed: 1 MB/s is noise on any RDMA link |
| ``storm_min_pause_per_s`` | 500 | for NICs that count pause frames but not their duration: a port held paused is re-paused hundreds (10 Gb/s) to thousands (100 Gb/s) of times a second |
| ``pressure_pause_ratio`` | 0.25 | info only: a priority paused a quarter of the time while traffic flows is congestion (incast) worth seeing, not a fault |
| ``pause_hot_ratio`` | 0.5 | the links table turns a port's pause counts red from here: paused half the time is a storm in the making, twice the pressure level and far beyond healthy incast, before ``storm_pause_ratio`` names it |
| ``lossless_drops_per_s`` | 0 | any drop on a PFC-enabled priority, or out-of-sequence on RoCE with PFC, means PFC is not protecting the flow |
| ``ecn_pause_per_s`` | 100 | sustained pauses at this rate are congestion DCQCN should be marking; a few isolated pauses without marks are normal |
| ``roce_min_mtu`` | 4200 | RoCE MTU 4096 needs the 4096-byte payload plus RoCE headers inside the netdev MTU; below that RoCE falls to 2048 |
| ``nic_temp_warn_c`` | 95 | about 10 °C below where ConnectX-class NICs report their critical temperature |
| ``nic_temp_crit_c`` | 105 | NICs start protecting themselves (throttle, port shutdown) around here |
| ``rdma_share_min`` | 0.05 | NCCL/RCCL over IB/RoCE puts nearly all bytes on RDMA; under 5% of a busy port means the job runs over TCP sockets |
| ``rdma_min_traffic_bps`` | 1e9 | below 1 Gb/s the port is idle enough that ssh, metrics and storage legitimately dominate |
| ``line_busy_ratio`` | 0.8 | the links table draws a port's share of line rate bold from here: past 80% a port is close to saturation, where incast starts to pause |
| ``gpu_temp_warn_c`` | 85 | data-center GPUs (A100/H100) list a maximum operating temperature of about 87-90 °C, where slowdown starts |
| ``gpu_mem_temp_warn_c`` | 95 | HBM's maximum operating temperature as nvidia-smi -q reports it on A100/H100 |
| ``token_drop_fraction`` | 0.5 | token rate at half its recent level or less: far beyond normal request-mix swings |
| ``token_min_per_s`` | 10 | a server producing fewer tokens than this is idle; its "drops" mean nothing |
| ``token_baseline_s`` | 60 | the recent level is the median token rate of the last minute |
| ``switch_pfc_watch_s`` | 60 | drops on a lossless priority with not one PFC pause received by any host in this long under load is evidence that the switch does not run PFC on that class (a switch that does pauses long before its buffer drops); a minute spans many incast bursts, while counters that read 0 since they started say so at once |
| ``tb_errors_per_s`` | 1 | thunderbolt-net counts a frame with a bad CRC, length or sequence, or one it had no room for, in rx_errors (drivers/net/thunderbolt/main.c); a good cable counts none at all, so one a second held over ``detect_s`` is a link that keeps corrupting frames, not a one-off |
| ``ber_window_s`` | 60 | the pre-FEC BER (fabtop/core/ber.py: corrected bits, else corrected FEC blocks x 1 bit as a lower bound, over the bits received where the driver counts them (rx_bits_phy), else the negotiated rate x the time up) is measured over the last minute: two reads of counters read at the 30 s slow cadence, and at 100 Gb/s and a BER of 1e-8 some 60,000 corrected bits, so a decade is no counting noise |
| ``ber_trend_s`` | 3600 | a link's BER is compared with its own first minute of readings kept, up to an hour ago, and its rise said in decades over the time it took: an optic that ages over days moves far less and is left to ``ber_warn_ratio`` |
| ``ber_warn_ratio`` | 1e-05 | RS(544,514) FEC, the FEC of 50 Gb/s-per-lane PAM4 links (200/400/800G Ethernet, HDR/NDR InfiniBand), corrects up to a pre-FEC BER of 2.4e-4 (IEEE 802.3 clause 119's limit) and healthy links run at 1e-8..1e-6: past 1e-5 little more than a decade of margin is left (critical at 10 x this) |
| ``ber_floor_ratio`` | 1e-08 | a rise is judged only where the BER reaches this: below it a 100 Gb/s link corrects under 1,000 bits a second, healthy PAM4 links sit at or above it (NRZ ones far below), and a decade between two small counts is noise |
| ``ber_rise_factor`` | 10 | a BER up tenfold (a decade) on the link's own baseline is a cable, optic or connector getting worse; a healthy link's BER moves by a factor of two or three with temperature, and a constant corrected rate, however high, is no rise |
| ``ber_flap_factor`` | 100 | SONiC's test plan "pre-FEC BER guard after a link flap": a link that comes back with a BER 100 x what it had before it went down retrained onto a damaged path (a dirty or half-seated connector) |
| ``ber_flap_settle_s`` | 10 | the BER after a flap is judged once 10 s of it are counted: link training is over within seconds, and at 100 Gb/s and 1e-6 ten seconds count a million bits |
| ``fec_uncorrectable_per_s`` | 0 | any block the FEC could not correct is a frame lost to bit errors (a CRC error a layer up): a healthy link counts none |
| ``symbol_errors_per_h`` | 120 | NVIDIA NVSentinel's mark: an InfiniBand port counting more than 120 symbol errors an hour (measured over the readings kept, at least ``ber_window_s``) has a bad cable or transceiver; any local link integrity error or link error recovery is named too |
| ``optic_rx_margin_db`` | 1 | sichek's mark: a lane's receive power within 1 dB of the module's own low alarm (its vendor's limit, read from the module) is a fibre or connector losing light; a module without limits (all zero: not implemented) is not judged, nor is a dark lane (one the port does not use, or a port that is down: the flap's finding) |
| ``module_temp_margin_c`` | 5 | a module within 5 °C of its own high-temperature warning (optics warn at 70-75 °C; sichek marks 65/75 °C) is one fan step from throttling or a link reset; a module without a limit is not judged |
| ``events_max_per_s`` | 1000 | an event counter (a link going down, a module or CPU overheating, the NIC's stall watchdog) counts what takes milliseconds at least to happen again: a 100G link takes seconds to retrain, a thermal or watchdog event is raised once per crossing; even a veth toggled in a loop by a script stays below this. A jump past it over an interval is a glitched read (a gap), never "link went down 3000000 times" |
| ``tokens_max_per_s`` | 1e7 | one inference server's token counters: 8 GPUs prefilling at 100,000 tokens/s each is under 10^6; a jump past this is a glitched or restarted counter (a gap), never a point of millions of tokens/s |
| ``frame_budget_s`` | 0.25 | a host's frame costs the collector about a millisecond to read (docs/BENCHMARKS.md), the first of a large host tens; one that takes a quarter of a second holds the loop every host shares for a quarter of a tick: past it that host's frames are read only one in N (N = its cost over this), so one host never takes more than about this share of each second |
| ``clock_skew_s`` | 5 | a host's clock this far from the operator's (either way) is skewed: frames are stamped when a tick starts and the tools may run up to their 2 s timeout (killed 1 s later) before one ships, so the measured offset can err by up to 3 s on a host whose every tick is slow, never by 5; 5 s is still far below a skew that misleads anyone correlating events (a minute) |
| ``self_lag_s`` | 1 | fabtop itself woke this late (its event loop blocked or starved: a loaded operator machine) is one finding, ``fabtop_behind`` (info: no fault of the fabric), held ``restore_s``; a full 1 s interval late is a tick the screen missed, while a busy loop's ordinary hiccups (a repaint, a pass of the rules) are tens of ms. Whatever the value, a host's silence never counts the time fabtop was behind |
| ``test_bw_ratio`` | 0.9 | ``fabtop test``: a pair passes at 0.9 x the reference rate (the RDMA port's negotiated rate, or the declared speed of an IP path), x2 both ways at once: NVIDIA ngc_multinode_perf's pass mark; the rest is protocol headers and the engine's own cost |
| ``test_bw_outlier_ratio`` | 0.93 | ``fabtop test``: a pair under 93 % of the fabric's best bandwidth (same plan, same reference rate) is an outlier, retested once before it is called bad: ClusterKit's relative mark, which finds a bad cable or port among healthy ones of the same speed |
| ``test_lat_avg_us`` | 2.5 | ``fabtop test``: RDMA write/send latency (mean of the samples, as ngc_multinode_perf's t_avg) at most 2.5 µs: ngc_multinode_perf's pass mark for one switch hop |
| ``test_read_lat_avg_us`` | 4.5 | ``fabtop test``: RDMA read latency (a read is a full round trip before data returns) at most 4.5 µs: ngc_multinode_perf's pass mark |
| ``test_lat_p99_us`` | 4.2 | ``fabtop test``: RDMA p99 latency at most 4.2 µs: imbue's cluster-health check on its InfiniBand fabric; a tail past it is queueing or retransmission, not distance |
| ``test_lat_outlier_factor`` | 2.1 | ``fabtop test``: a pair whose median latency is more than 2.1 x the fabric's best is an outlier, retested once: ClusterKit's relative mark; pairs of one fabric differ by hundreds of ns (a switch hop, a cable's length), twice the best is a queue, a retransmission or a slow path |
| ``test_fairness_ratio`` | 0.9 | ``fabtop test``: an incast whose senders' Jain fairness index is below 0.9 is unfair: with 4 senders, one held to 40 % of its fair share while the other three split the rest scores 0.89; congestion control that works gives near-equal shares |
| ``test_impact_p99_factor`` | 3 | ``fabtop test``: the latency pair's p99 under an incast into its receiver over its p99 alone (GPCNeT's congestion impact factor) above 3 is congestion leaking into other traffic: queues that ECN keeps short add a few µs to a 2-3 µs tail, without it they grow to the switch buffer (a few MB drain in hundreds of µs at 100 Gb/s: a factor near 100) |
| ``test_loss_fraction`` | 0.0005 | ``fabtop test``: an IP pair whose engine retransmitted more than 0.05 % of the bytes it sent (TCP's own retransmissions, iperf3's count times the path's MSS) lost packets on the path, whatever its bandwidth: a clean path retransmits none, TCP hides a loss like this from the bandwidth figure at a few hundred Mb/s (5 % random loss on a veth still moves 95 % of the shaped rate) while an RDMA queue pair on the same path goes back N packets per loss; a warning, with no NIC counter to blame when none moved |
| ``test_sizes_drop_ratio`` | 0.8 | ``fabtop test sizes``: a size whose bandwidth is under 80 % of a smaller size's falls with size, a warning: a path's bandwidth rises or stays flat with the message size (larger messages pay the same per-message cost over more bytes), while runs of one size on a healthy path differ by a few %; a fall past a fifth is a buffer, memory-registration or segmentation limit that prefill and KV transfers meet |
| ``test_loss_recovery_s`` | 2 | ``fabtop test loss``: the other senders of an incast must regain the receiver's bandwidth within 2 s of one sender's process being killed: TCP and DCQCN take freed bandwidth back within milliseconds to hundreds of ms on a fabric of µs round trips (their rate rises every round trip, every 55 µs for DCQCN), 2 s leaves room for the 0.25 s intervals it is measured in and stays under half NCCL's 4.3 s per try (4.096 µs x 2^20), so a slower fabric is one where a lost worker stalls the collectives of the rest; a warning |
| ``test_loss_regained_ratio`` | 0.9 | ``fabtop test loss``: the receiver's bandwidth is regained when the remaining senders together reach 0.9 x what it got from all of them before the kill, for two intervals in a row (``test_bw_ratio``'s share: the rest is the protocols' and the engine's own cost, and one interval could be a burst) |
| ``test_serving_token_ratio`` | 0.8 | ``fabtop test serving``: the inference server's token rate beside the test's incast or bidir over its own baseline below 0.8 is serving traffic sharing a congested queue with its neighbours' (no traffic class or rail of its own): a decode step waits on its collectives, so a fifth of the tokens lost is the fabric, while a server's own demand rarely moves its rate that much between windows a few seconds apart; a warning, since the test made the load on purpose |
| ``test_serving_p99_factor`` | 2 | ``fabtop test serving``: TTFT, inter-token latency or queue time p99 beside the loads more than 2 x its baseline is a tail the neighbour traffic made: a prefill's KV transfer or a decode's all-to-all that queues behind bulk traffic doubles a p99 long before it moves a median; a warning, as above |
| ``test_serving_recovered_ratio`` | 0.9 | ``fabtop test serving``: the token rate after the loads ended below 0.9 x the baseline is a server that did not recover (requests still queued, a worker or connection lost): the loads are gone, so what stays is damage, not congestion; a failure |
"""  # noqa: E501 (a markdown table the README copies)

from __future__ import annotations

from collections.abc import Iterable, Mapping

DEFAULT_THRESHOLDS: dict[str, float] = {
    "detect_s": 2.0,
    "restore_s": 4.0,
    "event_hold_s": 120.0,
    "storm_pause_ratio": 0.99,
    "storm_flat_fraction": 0.02,
    "storm_flat_bytes_per_s": 1e6,
    "storm_min_pause_per_s": 500.0,
    "pressure_pause_ratio": 0.25,
    "pause_hot_ratio": 0.5,
    "lossless_drops_per_s": 0.0,
    "ecn_pause_per_s": 100.0,
    "roce_min_mtu": 4200.0,
    "nic_temp_warn_c": 95.0,
    "nic_temp_crit_c": 105.0,
    "rdma_share_min": 0.05,
    "rdma_min_traffic_bps": 1e9,
    "line_busy_ratio": 0.8,
    "gpu_temp_warn_c": 85.0,
    "gpu_mem_temp_warn_c": 95.0,
    "token_drop_fraction": 0.5,
    "token_min_per_s": 10.0,
    "token_baseline_s": 60.0,
    "switch_pfc_watch_s": 60.0,
    "clock_skew_s": 5.0,
    "ber_window_s": 60.0,
    "ber_trend_s": 3600.0,
    "ber_warn_ratio": 1e-5,
    "ber_floor_ratio": 1e-8,
    "ber_rise_factor": 10.0,
    "ber_flap_factor": 100.0,
    "ber_flap_settle_s": 10.0,
    "fec_uncorrectable_per_s": 0.0,
    "symbol_errors_per_h": 120.0,
    "optic_rx_margin_db": 1.0,
    "module_temp_margin_c": 5.0,
    "events_max_per_s": 1000.0,
    "tokens_max_per_s": 1e7,
    "frame_budget_s": 0.25,
    "tb_errors_per_s": 1.0,
    "self_lag_s": 1.0,
    "test_bw_ratio": 0.9,
    "test_bw_outlier_ratio": 0.93,
    "test_lat_avg_us": 2.5,
    "test_read_lat_avg_us": 4.5,
    "test_lat_p99_us": 4.2,
    "test_lat_outlier_factor": 2.1,
    "test_fairness_ratio": 0.9,
    "test_impact_p99_factor": 3.0,
    "test_loss_fraction": 0.0005,
    "test_sizes_drop_ratio": 0.8,
    "test_loss_recovery_s": 2.0,
    "test_loss_regained_ratio": 0.9,
    "test_serving_token_ratio": 0.8,
    "test_serving_p99_factor": 2.0,
    "test_serving_recovered_ratio": 0.9,
}


def effective(overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """The defaults with ``overrides`` (a config's ``[thresholds]``) over them."""
    return {**DEFAULT_THRESHOLDS, **(overrides or {})}


def unknown_thresholds(names: Iterable[str]) -> list[str]:
    """Names in a ``[thresholds]`` table that no rule reads (typos), sorted."""
    return sorted(n for n in names if n not in DEFAULT_THRESHOLDS)


# What a config may set a threshold to, by the unit its name ends with (longest first:
# "_per_s" before "_s"). Beyond these a value is a typo, not a choice: a ratio is a share,
# a detect_s of 1e9 would keep `fabtop doctor` watching for 30 years.
_RANGES: tuple[tuple[str, float, float], ...] = (
    ("_ratio", 0.0, 1.0),
    ("_fraction", 0.0, 1.0),
    ("_share_min", 0.0, 1.0),
    ("_per_s", 0.0, 1e15),  # events or bytes a second: 1e15 is beyond any link
    ("_per_h", 0.0, 1e15),  # events an hour, the same
    ("_bps", 0.0, 1e15),
    ("_s", 0.0, 86_400.0),  # a day: longer than any watch or hold
    ("_c", 0.0, 200.0),  # degrees Celsius: beyond any chip's limit
    ("_mtu", 0.0, 65_536.0),  # the largest IP MTU
    ("_us", 0.0, 1e6),  # a latency mark: a second is beyond any fabric's
    ("_factor", 1.0, 1e4),  # "this many times the other": under 1 flags everything
    ("_db", 0.0, 40.0),  # a margin in decibels: 40 dB is beyond any optic's range
)


def threshold_range(name: str) -> tuple[float, float]:
    """The values a config's ``[thresholds]`` may give ``name`` (a known threshold)."""
    return next((lo, hi) for suffix, lo, hi in _RANGES if name.endswith(suffix))
