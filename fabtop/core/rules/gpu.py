"""GPU rules: sustained thermal slowdown, hot GPU or HBM."""

from __future__ import annotations

from collectors.samples import GpuSample
from fabtop.core.findings import Finding
from fabtop.core.rules.context import RuleContext, host_time, placed_time
from fabtop.core.rules.kinds import window_rule

# nvidia_smi parser names (NVML clock event reason bits 0x20 / 0x40).
_SW_THERMAL = "sw_thermal_slowdown"
_HW_THERMAL = "hw_thermal_slowdown"
# What thermal_slowdown() says: none, software (the driver's), hardware (the board's).
NO_SLOWDOWN, SW_SLOWDOWN, HW_SLOWDOWN = 0, 1, 2


def thermal_reasons(g: GpuSample) -> list[str]:
    """The thermal ones among ``g``'s clock event reasons: what the rule fires on."""
    return [r for r in g.throttle_reasons if "thermal" in r.lower()]


def thermal_slowdown(g: GpuSample) -> int:
    """How ``g``'s clocks are held down for heat, as the rule's severity reads it (the
    exporter's ``fabtop_gpu_thermal_slowdown``)."""
    reasons = thermal_reasons(g)
    if not reasons:
        return NO_SLOWDOWN
    return HW_SLOWDOWN if any(r.lower() == _HW_THERMAL for r in reasons) else SW_SLOWDOWN


def _gpus(ctx: RuleContext) -> list[tuple[str, GpuSample, float, float]]:
    """(host, gpu, remote time, seconds since the host's previous frame) for every GPU;
    made once per pass (both GPU rules walk it)."""
    if ctx.gpus is not None:
        return ctx.gpus
    out: list[tuple[str, GpuSample, float, float]] = []
    for hs in ctx.state.hosts.values():
        s = hs.sample
        if s is None:
            continue
        r = hs.rates
        t = placed_time(s.gpu_read_ns / 1e9, s, r) if s.gpu_read_ns else host_time(s, r)
        dt = hs.rates.interval_s if hs.rates is not None and hs.rates.interval_s else 0.0
        out.extend([(hs.name, g, t, dt) for g in s.gpus])
    ctx.gpus = out  # whole: a failure above leaves the next rule to try again
    return out


@window_rule("gpu_thermal_slowdown")
def gpu_thermal_slowdown(ctx: RuleContext) -> list[Finding]:
    """A GPU whose clocks are held down for thermal reasons, sustained for the detection time."""
    remembered = ctx.remembers("gpu_thermal_slowdown")
    out: list[Finding] = []
    for host, g, t, dt in _gpus(ctx):
        slowdown = thermal_slowdown(g)
        if slowdown == NO_SLOWDOWN and not remembered:
            continue  # not throttled and nothing remembered
        subject = f"{host}/gpu{g.index}"
        key = ("gpu_thermal_slowdown", subject)
        found = None
        if slowdown != NO_SLOWDOWN:
            hw = slowdown == HW_SLOWDOWN
            clock = f" at {g.sm_clock_mhz:.0f} MHz" if g.sm_clock_mhz is not None else ""
            temp = f", {g.temperature_c:.0f} °C" if g.temperature_c is not None else ""
            found = Finding(
                rule="gpu_thermal_slowdown",
                severity="critical" if hw else "warning",
                subject=subject,
                summary=(
                    f"{host} GPU {g.index}: {'hardware' if hw else 'software'} thermal slowdown"
                    f"{clock}{temp}: it is slowing the whole job"
                ),
                evidence={
                    "throttle_reasons": ",".join(g.throttle_reasons),
                    "temperature_c": g.temperature_c,
                    "memory_temperature_c": g.memory_temperature_c,
                    "sm_clock_mhz": g.sm_clock_mhz,
                    "power_w": g.power_w,
                },
                next_step=(
                    f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i {g.index}; "
                    "check fans, inlet temperature and the server's airflow"
                ),
                host=host,
            )
        ctx.report_debounced(out, found, key, t, dt)
    return out


@window_rule("gpu_hot")
def gpu_hot(ctx: RuleContext) -> list[Finding]:
    """GPU core or memory temperature at or above its warning threshold."""
    remembered = ctx.remembers("gpu_hot")
    out: list[Finding] = []
    warn, mem_warn = ctx.th("gpu_temp_warn_c"), ctx.th("gpu_mem_temp_warn_c")
    for host, g, t, dt in _gpus(ctx):
        core, mem = g.temperature_c, g.memory_temperature_c
        core_hot = core is not None and core >= warn
        mem_hot = mem is not None and mem >= mem_warn
        if not (core_hot or mem_hot) and not remembered:
            continue  # as above
        hot = []
        if core_hot:
            hot.append(f"core {core:.0f} °C (warning at {warn:.0f})")
        if mem_hot:
            hot.append(f"memory {mem:.0f} °C (warning at {mem_warn:.0f})")
        subject = f"{host}/gpu{g.index}"
        key = ("gpu_hot", subject)
        found = None
        if hot:
            found = Finding(
                rule="gpu_hot",
                severity="warning",
                subject=subject,
                summary=f"{host} GPU {g.index} is hot: {', '.join(hot)}",
                evidence={
                    "temperature_c": g.temperature_c,
                    "memory_temperature_c": g.memory_temperature_c,
                    "fan_pct": g.fan_pct,
                    "power_w": g.power_w,
                },
                next_step=f"nvidia-smi -q -d TEMPERATURE -i {g.index}; check fans and airflow",
                host=host,
            )
        ctx.report_debounced(out, found, key, t, dt)
    return out
