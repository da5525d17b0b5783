#!/bin/sh
# GPU-side checks of the device, environment and container probes (run on the GPU machine by
# the integrator; see /work/shared/device.md). Needs build/gpuvet built on the CI image, and
# the libraries of .devlib/ when the machine lacks them. Writes everything under $OUT.
#
# What it must show:
#  - check.json: devices.nvidiactl/nvidia_uvm true, devices.gpu.present = nvidia-smi's GPU count,
#    every node access true; container.* as the machine really is; no fail from devices/env/container.
#  - cvd.tsv: for every CUDA_VISIBLE_DEVICES value, torch.cuda.device_count() equals the count
#    gpuvet predicts (column "gpuvet"), which checks the parser's reading of CUDA's rules
#    (stop at the first bad entry, UUID prefixes, duplicates, blanks).
#  - alloc.tsv: torch raises at the first allocation exactly for the values gpuvet calls invalid.
set -u
OUT=${OUT:-/tmp/gpuvet-sysprobes}
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=./build/gpuvet

{ nvidia-smi -L; ls -l /dev/nvidia* /dev/nvidia-caps 2>&1; id; df -h /dev/shm; grep ' /dev/shm ' /proc/mounts;
  cat /proc/1/cgroup 2>&1 | head -5; ls -la /.dockerenv /run/.containerenv 2>&1; env | grep -E '^(CUDA|NVIDIA|NCCL|PYTORCH|TORCH)_' ; } \
	> "$OUT/machine.txt" 2>&1
"$G" check --json --no-python > "$OUT/check.json" 2> "$OUT/check.stderr"
echo "check exit $?" >> "$OUT/check.stderr"
"$G" check --no-python --verbose > "$OUT/check.txt" 2>&1
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$G" check --json --no-python > "$OUT/check-nobody.json" 2>&1
fi

python3 - "$G" "$OUT" <<'PY'
import json, os, re, subprocess, sys
g, out = sys.argv[1], sys.argv[2]
uuids = [l.split('UUID: ')[1].rstrip(')') for l in subprocess.run(['nvidia-smi', '-L'], capture_output=True,
         text=True).stdout.splitlines() if 'UUID: ' in l]
u0 = uuids[0] if uuids else 'GPU-none'
u1 = uuids[1] if len(uuids) > 1 else u0
values = ['0,1', '1,0', '1', '', '-1', '0,,1', '0,2,1', '2,0', '0,0', '0, 1', ' 1', 'x,0', '0,x',
          u1, u1[:12], 'GPU-', 'GPU-00000000', '%s,%s' % (u0, u0), '1,%s' % u1, '99999999999999999999',
          '0,1,', ',0']

def run(env_extra, code):
    env = dict(os.environ, **env_extra)
    p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, (p.stdout.strip() or p.stderr.strip().splitlines()[-1:] or [''])[0][:200]

def gpuvet(env_extra):
    env = dict(os.environ, **env_extra)
    p = subprocess.run([g, 'check', '--json', '--fast'], capture_output=True, text=True, env=env, timeout=120)
    d = json.loads(p.stdout)
    fs = [f for f in d['findings'] if f['id'].startswith('env.')]
    return fs

def predicted(v, fs):
    """the GPU count gpuvet's finding implies"""
    if not fs:
        return len(v.split(','))
    t = fs[0]['title']
    m = re.search(r'only the first (\d+) of', t)
    if m:
        return int(m.group(1))
    if 'hides every GPU' in t or 'empty' in t:
        return 0
    if 'MIG' in t:
        return 1
    return len(v.split(','))

bad = 0
with open(os.path.join(out, 'cvd.tsv'), 'w') as t:
    t.write('value\ttorch_count\tgpuvet\tagree\tfinding\n')
    for v in values:
        rc, n = run({'CUDA_VISIBLE_DEVICES': v}, 'import torch; print(torch.cuda.device_count())')
        fs = [f for f in gpuvet({'CUDA_VISIBLE_DEVICES': v}) if f['id'] == 'env.visible-devices']
        p = predicted(v, fs)
        agree = n == str(p)
        bad += not agree
        t.write('%r\t%s\t%d\t%s\t%s\n' % (v, n, p, 'yes' if agree else 'NO', fs[0]['title'] if fs else '(none)'))
    t.write('disagreements: %d\n' % bad)

confs = ['expandable_segments:True', 'expandable_segments:true', 'roundup_power2:True', 'max_split_size_mb:10',
         'max_split_size_mb:512MB', 'garbage_collection_threshold:0.6,max_split_size_mb:128',
         'roundup_power2_divisions:[256:1,512:2,>:8]', 'backend:cudaMallocAsync,max_split_size_mb:64',
         'expandable_segments:True,', 'pinned_num_register_threads:3', 'large_segment_size_mb:64',
         'graph_capture_record_stream_reuse:True', 'pinned_reserve_segment_size_mb:8']
with open(os.path.join(out, 'alloc.tsv'), 'w') as t:
    t.write('value\ttorch\tgpuvet\n')
    for v in confs:
        rc, msg = run({'PYTORCH_CUDA_ALLOC_CONF': v}, 'import torch; torch.zeros(1, device="cuda"); print("ok")')
        fs = [f for f in gpuvet({'PYTORCH_CUDA_ALLOC_CONF': v}) if f['id'] == 'env.alloc-conf']
        t.write('%s\t%s\t%s\n' % (v, msg, '; '.join(fs[0]['evidence'][1:]) if fs and fs[0]['severity'] != 'info'
                                  else 'valid'))
PY
echo done
