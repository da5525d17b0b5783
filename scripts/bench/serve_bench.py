#!/usr/bin/env python3
"""Measures gpuvet serve the way docs/benchmarks.md reports it, beside the cost of spawning
`nvidia-smi --query-gpu` once per scrape (what nvidia_gpu_exporter does):

  - gpuvet serve at --interval 1: CPU share of one core over --idle-seconds while Prometheus
    would scrape every 15 s; scrape latency p50/p99 over --scrapes sequential scrapes (a new
    connection each); resident size (VmRSS) and its peak (VmHWM).
  - the spawn loop: --spawns runs of nvidia-smi --query-gpu=<41 fields> --format=csv, each
    timed; CPU per run; the largest child's peak resident size.

Without a GPU pass --fake-nvml (the test double, 8 GPUs with changing values) and
--nvidia-smi scripts/bench/fake-nvidia-smi (a stand-in: far cheaper than the real one). On the
GPU machine leave both out. Talks only to 127.0.0.1. Prints a table and writes --json."""
import argparse
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time

FIELDS = ("index,name,uuid,pci.bus_id,driver_version,pstate,temperature.gpu,temperature.memory,utilization.gpu,"
          "utilization.memory,memory.total,memory.used,memory.free,memory.reserved,power.draw,power.limit,"
          "enforced.power.limit,clocks.sm,clocks.mem,clocks.gr,clocks.max.sm,clocks.max.mem,pcie.link.gen.current,"
          "pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,fan.speed,ecc.errors.corrected.volatile.total,"
          "ecc.errors.uncorrected.volatile.total,retired_pages.pending,clocks_event_reasons.active,"
          "clocks_event_reasons.hw_slowdown,clocks_event_reasons.sw_thermal_slowdown,"
          "clocks_event_reasons.sw_power_cap,persistence_mode,compute_mode,display_mode,mig.mode.current,"
          "encoder.stats.sessionCount,serial,vbios_version")

FAKE_CONFIG = """device_count = 8
gpu.*.util_gpu = 10,55,90,35
gpu.*.temperature = 41,44,47
gpu.*.memory_used = 1GiB,20GiB,70GiB
gpu.*.power_mw = 120000,450000,690000
gpu.*.sm_clock = 1980,1755
gpu.1.processes = 4242:python:30GiB
"""


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port):
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    n = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        n += len(b)
    s.close()
    return time.perf_counter() - t0, n


def bench_gpuvet(a, env):
    err = tempfile.TemporaryFile()
    p = subprocess.Popen([a.gpuvet, "serve", "--listen", "127.0.0.1:0", "--interval", "1"], env=env,
                         stdout=subprocess.DEVNULL, stderr=err)
    try:
        port = None
        deadline = time.time() + 20
        while port is None and time.time() < deadline:
            err.seek(0)
            m = re.search(rb"serving http://[^ ]*:(\d+)/metrics", err.read())
            port = int(m.group(1)) if m else None
            time.sleep(0.05)
        if port is None:
            err.seek(0)
            sys.exit("gpuvet serve did not start: %s" % err.read().decode())
        time.sleep(a.warmup)
        body = scrape(port)[1]
        # CPU share at 1 s sampling, scraped every 15 s as Prometheus would
        c0, t0 = cpu_seconds(p.pid), time.time()
        while time.time() - t0 < a.idle_seconds:
            scrape(port)
            time.sleep(min(15, max(0, a.idle_seconds - (time.time() - t0))))
        cpu_share = (cpu_seconds(p.pid) - c0) / (time.time() - t0)
        rss_idle = status(p.pid, "VmRSS")
        # latency, sequential scrapes
        c1 = cpu_seconds(p.pid)
        lat = [scrape(port)[0] for _ in range(a.scrapes)]
        cpu_per_scrape = (cpu_seconds(p.pid) - c1) / a.scrapes
        return {
            "scrape_bytes": body,
            "scrape_ms_p50": pct(lat, 50) * 1e3,
            "scrape_ms_p99": pct(lat, 99) * 1e3,
            "scrape_ms_max": max(lat) * 1e3,
            "scrapes": a.scrapes,
            "cpu_share_idle_1s_sampling": cpu_share,
            "idle_seconds": a.idle_seconds,
            "cpu_ms_per_scrape": cpu_per_scrape * 1e3,
            "rss_kib": rss_idle,
            "rss_peak_kib": status(p.pid, "VmHWM"),
        }
    finally:
        p.terminate()
        p.wait(10)


def bench_spawn(a, env):
    cmd = [a.nvidia_smi, "--query-gpu=" + FIELDS, "--format=csv,noheader,nounits"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    lat, out_bytes, failures = [], 0, 0
    for _ in range(a.spawns):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, env=env, capture_output=True)
        lat.append(time.perf_counter() - t0)
        out_bytes = len(r.stdout)
        failures += r.returncode != 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "command": " ".join(cmd[:1]) + " --query-gpu=<%d fields> --format=csv,noheader,nounits" % len(FIELDS.split(",")),
        "spawns": a.spawns,
        "failures": failures,
        "output_bytes": out_bytes,
        "ms_p50": pct(lat, 50) * 1e3,
        "ms_p99": pct(lat, 99) * 1e3,
        "ms_max": max(lat) * 1e3,
        "cpu_ms_per_run": cpu / a.spawns * 1e3,
        "cpu_share_at_15s_scrapes": cpu / a.spawns / 15,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpuvet", required=True)
    ap.add_argument("--fake-nvml", help="the fake libnvidia-ml (no GPU here)")
    ap.add_argument("--nvidia-smi", default="nvidia-smi")
    ap.add_argument("--scrapes", type=int, default=2000)
    ap.add_argument("--spawns", type=int, default=200)
    ap.add_argument("--idle-seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    env = dict(os.environ, GPUVET_NO_HISTORY="1")
    if a.fake_nvml:
        fd, cfg = tempfile.mkstemp(suffix=".conf")
        os.write(fd, FAKE_CONFIG.encode())
        os.close(fd)
        env.update(GPUVET_NVML_LIB=os.path.abspath(a.fake_nvml), GPUVET_FAKE_CONFIG=cfg)
    res = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"nproc": os.cpu_count(), "loadavg": open("/proc/loadavg").read().split()[:3],
                    "kernel": os.uname().release},
        "nvml": "fake (tests/fake, 8 GPUs)" if a.fake_nvml else "real",
        "gpuvet": bench_gpuvet(a, env),
        "spawn_loop": bench_spawn(a, env),
    }
    g, s = res["gpuvet"], res["spawn_loop"]
    print("| | gpuvet serve (cached, 1 s sampling) | spawn %s per scrape |" % os.path.basename(a.nvidia_smi))
    print("|---|---|---|")
    print("| scrape latency p50 / p99 | %.3f / %.3f ms | %.1f / %.1f ms |" % (g["scrape_ms_p50"], g["scrape_ms_p99"], s["ms_p50"], s["ms_p99"]))
    print("| CPU share of one core | %.3f %% (sampling every 1 s, scraped every 15 s) | %.3f %% (one run per 15 s scrape) |" % (
        g["cpu_share_idle_1s_sampling"] * 100, s["cpu_share_at_15s_scrapes"] * 100))
    print("| CPU per scrape | %.3f ms | %.2f ms |" % (g["cpu_ms_per_scrape"], s["cpu_ms_per_run"]))
    print("| resident size | %.1f MiB (peak %.1f MiB) | (a process per scrape) |" % (g["rss_kib"] / 1024, g["rss_peak_kib"] / 1024))
    print("| response | %d bytes | %d bytes of CSV |" % (g["scrape_bytes"], s["output_bytes"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
