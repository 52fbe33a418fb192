#!/bin/sh
# One-shot check on a machine with an NVIDIA GPU (not run yet: no GPU was at hand when
# this was written). Records real nvidia-smi output and NVML readings into $OUT (or
# ./gpu_capture) and runs fabtop's parsers on them, printing a side-by-side comparison.
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
OUT="$OUT" $PY - <<'PYEOF'
import json, os, sys
sys.path.insert(0, ".")
from collectors.parsers.nvidia_smi import QUERY_FIELDS, parse_query_csv, parse_query_xml

out = os.environ["OUT"]
def read(name):
    try:
        with open(os.path.join(out, name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""

nvml = []
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
        nvml.append({
            "index": i,
            "name": get(N.nvmlDeviceGetName),
            "bus_id": getattr(get(N.nvmlDeviceGetPciInfo), "busId", None),
            "utilization_pct": getattr(util, "gpu", None),
            "memory_used_mib": mem.used / 2**20 if hasattr(mem, "used") else None,
            "memory_total_mib": mem.total / 2**20 if hasattr(mem, "total") else None,
            "power_w": (lambda v: v / 1000 if isinstance(v, int) else v)(get(N.nvmlDeviceGetPowerUsage)),
            "temperature_c": get(N.nvmlDeviceGetTemperature, N.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": get(N.nvmlDeviceGetClockInfo, N.NVML_CLOCK_SM),
            "mem_clock_mhz": get(N.nvmlDeviceGetClockInfo, N.NVML_CLOCK_MEM),
            "throttle_mask": get(N.nvmlDeviceGetCurrentClocksThrottleReasons),
        })
    N.nvmlShutdown()
except Exception as e:  # noqa: BLE001
    nvml = [{"error": repr(e)}]
with open(os.path.join(out, "nvml.json"), "w") as f:
    json.dump(nvml, f, indent=1, default=str)

csv_h = parse_query_csv(read("query_csv_header.csv"), QUERY_FIELDS)
lms = parse_query_csv(read("query_lms.csv"), QUERY_FIELDS)
xml = parse_query_xml(read("q_x.xml"))
print("warnings csv:", csv_h.warnings, "lms:", lms.warnings[:3], "xml:", xml.warnings[:3])
print("gpus: csv", len(csv_h.gpus), "lms rows", len(lms.gpus), "xml", len(xml.gpus), "nvml", len(nvml))
keys = ("name", "bus_id", "utilization_pct", "memory_used_mib", "memory_total_mib", "power_w",
        "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "throttle_reasons")
for i, g in enumerate(csv_h.gpus):
    x = xml.gpus[i] if i < len(xml.gpus) else None
    n = nvml[i] if i < len(nvml) else {}
    print(f"--- GPU {g.index}")
    for k in keys:
        print(f"  {k:18} csv={getattr(g, k)!r:40} xml={getattr(x, k, None)!r:40} nvml={n.get(k, n.get('throttle_mask') if k == 'throttle_reasons' else None)!r}")
PYEOF
ls -l "$OUT"
