#!/bin/sh
# One-shot check on a machine with an NVIDIA GPU (first run 2026-12-04 on an H200, driver
# 580.159.04: tests/fixtures/gpu_h200/). Records real nvidia-smi output and NVML readings
# into $OUT (or ./gpu_capture), idle and then under a load (a bf16 matrix-product loop
# through PyTorch, where it is installed), and runs fabtop's CSV parser on them, printing
# a side-by-side comparison with NVML.
#
#   OUT=/tmp/gpu sh benchmarks/gpu_device_check.sh    (from the repo root)
set -u
OUT=${OUT:-./gpu_capture}
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
mkdir -p "$OUT"
FIELDS=$($PY -c 'from collectors.parsers.nvidia_smi import QUERY_FIELDS as Q; print(",".join(Q))')
FALLBACK=$($PY -c 'from collectors.parsers.nvidia_smi import FALLBACK_FIELDS as Q; print(",".join(Q))')
nvidia-smi --version > "$OUT/nvidia_smi_version.txt" 2>&1
nvidia-smi --help-query-gpu > "$OUT/help_query_gpu.txt" 2>&1
timeout 20 nvidia-smi --query-gpu="$FIELDS" --format=csv > "$OUT/query_csv_header.csv" 2> "$OUT/query_csv_header.err"
echo "query (header) rc=$?"
timeout 20 nvidia-smi --query-gpu="$FALLBACK" --format=csv > "$OUT/query_fallback.csv" 2> "$OUT/query_fallback.err"
# The probe's persistent form: noheader,nounits every 500 ms; three samples are enough.
timeout 5 nvidia-smi --query-gpu="$FIELDS" --format=csv,noheader,nounits -lms 500 > "$OUT/query_lms.csv" 2> "$OUT/query_lms.err"
echo "query -lms rc=$? (124 = stopped by timeout, expected)"
timeout 30 nvidia-smi -q -x > "$OUT/q_x.xml" 2> "$OUT/q_x.err"
echo "-q -x rc=$?"
printf '%s\n' "$FIELDS" > "$OUT/fields.txt"
# Under load: the probe's persistent query while a matrix-product loop keeps the GPU busy.
if $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	$PY - <<'PYEOF' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.monotonic() + 20
while time.monotonic() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
PYEOF
	LOADP=$!
	sleep 4
	timeout 5 nvidia-smi --query-gpu="$FIELDS" --format=csv,noheader,nounits -lms 500 > "$OUT/query_lms_loaded.csv" 2> "$OUT/query_lms_loaded.err"
	echo "query -lms under load rc=$?"
	LOADED=1
else
	echo "no torch with CUDA: no loaded capture"
	LOADED=0
fi
OUT="$OUT" LOADED="$LOADED" $PY - <<'PYEOF'
import json, os, sys
sys.path.insert(0, ".")
from collectors.parsers.nvidia_smi import QUERY_FIELDS, parse_query_csv

out = os.environ["OUT"]
def read(name):
    try:
        with open(os.path.join(out, name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""

def nvml_now():
    got = []
    try:
        import pynvml as N
        N.nvmlInit()
        for i in range(N.nvmlDeviceGetCount()):
            h = N.nvmlDeviceGetHandleByIndex(i)
            def get(fn, *a):
                try:
                    return fn(h, *a)
                except Exception as e:  # noqa: BLE001 - record what NVML refused
                    return f"error: {e}"
            mem = get(N.nvmlDeviceGetMemoryInfo)
            util = get(N.nvmlDeviceGetUtilizationRates)
            power = get(N.nvmlDeviceGetPowerUsage)
            got.append({
                "index": i,
                "name": get(N.nvmlDeviceGetName),
                "bus_id": getattr(get(N.nvmlDeviceGetPciInfo), "busId", None),
                "utilization_pct": getattr(util, "gpu", None),
                "memory_used_mib": mem.used / 2**20 if hasattr(mem, "used") else None,
                "memory_total_mib": mem.total / 2**20 if hasattr(mem, "total") else None,
                "power_w": power / 1000 if isinstance(power, int) else power,
                "temperature_c": get(N.nvmlDeviceGetTemperature, N.NVML_TEMPERATURE_GPU),
                "sm_clock_mhz": get(N.nvmlDeviceGetClockInfo, N.NVML_CLOCK_SM),
                "mem_clock_mhz": get(N.nvmlDeviceGetClockInfo, N.NVML_CLOCK_MEM),
                "throttle_mask": get(N.nvmlDeviceGetCurrentClocksEventReasons)
                if hasattr(N, "nvmlDeviceGetCurrentClocksEventReasons")
                else get(N.nvmlDeviceGetCurrentClocksThrottleReasons),
            })
        N.nvmlShutdown()
    except Exception as e:  # noqa: BLE001
        got = [{"error": repr(e)}]
    return got

nvml = nvml_now()
with open(os.path.join(out, "nvml.json"), "w") as f:
    json.dump(nvml, f, indent=1, default=str)
keys = ("name", "bus_id", "utilization_pct", "memory_used_mib", "memory_total_mib", "power_w",
        "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "throttle_reasons")
for label, name in (("idle, header", "query_csv_header.csv"), ("idle, -lms", "query_lms.csv"),
                    ("under load, -lms", "query_lms_loaded.csv")):
    text = read(name)
    if not text:
        continue
    got = parse_query_csv(text, QUERY_FIELDS)
    print(f"== {label} ({name}): {len(got.gpus)} GPU(s), warnings {list(got.warnings)[:3]}")
    for g in got.gpus:
        n = nvml[g.index] if g.index < len(nvml) else {}
        for k in keys:
            v = n.get(k, n.get("throttle_mask") if k == "throttle_reasons" else None)
            print(f"  {k:18} parsed={getattr(g, k)!r:48} nvml(now)={v!r}")
PYEOF
[ "$LOADED" = 1 ] && wait "$LOADP"
ls -l "$OUT"
