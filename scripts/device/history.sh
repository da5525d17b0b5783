#!/bin/sh
# On the GPU machine: `gpuvet check` stores its run with the machine's GPUs (names, UUIDs, bus
# ids), driver and CUDA version and the conditions seen; they must match nvidia-smi. Also runs the
# history unit tests there (kill -9 during writes, concurrent writers) on that machine's disk.
# Needs build/ (and .devlib/ for libcjson/libmicrohttpd, see ../shared/device.md) carried.
# Logs and a verdict go to $OUT; exits non-zero when anything disagrees.
set -u
OUT=${OUT:-/tmp/gpuvet-history-out}
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=./build/gpuvet
DB="$OUT/history.db"
rm -f "$DB" "$DB-wal" "$DB-shm" "$DB-verified"
status=0

date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
	--format=csv,noheader,nounits > "$OUT/nvidia-smi.csv" 2>&1
"$G" check --fast --no-python --db "$DB" > "$OUT/check-fast.txt" 2> "$OUT/check-fast.err"
echo "check --fast exit $?" >> "$OUT/exit-codes.txt"
"$G" check --json --db "$DB" > "$OUT/check.json" 2> "$OUT/check.err"
echo "check exit $?" >> "$OUT/exit-codes.txt"
"$G" history list --db "$DB" > "$OUT/history-list.txt" 2>&1
"$G" history show latest --db "$DB" > "$OUT/history-show.txt" 2>&1
"$G" history show latest --json --db "$DB" > "$OUT/history-show.json" 2>&1
"$G" history compare --db "$DB" > "$OUT/history-compare.txt" 2>&1
echo "history compare exit $?" >> "$OUT/exit-codes.txt"

python3 - "$OUT" > "$OUT/verdict.txt" 2>&1 <<'PY' || status=1
import csv, json, sys
out = sys.argv[1]
smi = [[c.strip() for c in row] for row in csv.reader(open(f"{out}/nvidia-smi.csv")) if row]
run = json.load(open(f"{out}/history-show.json"))
bad = []
gpus = {g["index"]: g for g in run["gpus"]}
if len(gpus) != len(smi):
    bad.append(f"{len(gpus)} GPUs stored, nvidia-smi lists {len(smi)}")
for row in smi:
    idx, name, uuid, bus, driver = int(row[0]), row[1], row[2], row[3], row[4]
    g = gpus.get(idx)
    if not g:
        bad.append(f"GPU {idx} not stored"); continue
    for key, want in (("name", name), ("uuid", uuid)):
        if g.get(key) != want:
            bad.append(f"GPU {idx} {key}: stored {g.get(key)!r}, nvidia-smi {want!r}")
    if (g.get("bus_id") or "").lower() != bus.lower():
        bad.append(f"GPU {idx} bus id: stored {g.get('bus_id')!r}, nvidia-smi {bus!r}")
    for key in ("sm_clock_mhz", "temperature_c", "power_w"):
        if g.get(key) is None:
            bad.append(f"GPU {idx}: {key} not stored")
    if run["meta"].get("driver") != driver:
        bad.append(f"driver: stored {run['meta'].get('driver')!r}, nvidia-smi {driver!r}")
if not run["complete"] or run["kind"] != "check":
    bad.append("latest run is not a complete check run")
print("stored run:", json.dumps({k: run[k] for k in ("id", "kind", "summary", "meta")}))
print("\n".join(bad) if bad else "OK: stored GPUs, driver and conditions match nvidia-smi")
sys.exit(1 if bad else 0)
PY

for t in test_history test_history_cmd; do
	if ./build/tests/$t > "$OUT/$t.txt" 2>&1; then echo "$t passed" >> "$OUT/verdict.txt"
	else echo "$t FAILED" >> "$OUT/verdict.txt"; status=1; fi
done
cat "$OUT/verdict.txt"
exit $status
