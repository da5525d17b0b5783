#!/usr/bin/env python3
"""gpuvet serve against the fake NVML at 8 GPUs with changing values: promtool in both naming
modes, values equal to the fake's (a MIG GPU's devices among them), OpenMetrics, a sampler that
starts failing, the loopback default, /healthz, --textfile."""
import gzip
import io
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import gvtest
from gvtest import check, Fail

GPUVET, FAKE = gvtest.args()

N = 8
CONFIG = ["device_count = %d" % N, "gpu.*.util_gpu = 10,20,30", "gpu.3.clock_reasons = 0x4",
          "gpu.5.pcie_width = 8", "gpu.2.xid = 79", "gpu.1.processes = 4242:python:3GiB",
          "gpu.7.name = Weird \"GPU\" \\ 7", "xid_wait_max_ms = 20", "gpu.6.memory_temp = unsupported",
          "gpu.4.pcie_replay = 12", "gpu.6.mig_mode = 1", "gpu.6.mig.count = 2", "gpu.6.mig.1.gi = 5",
          "gpu.6.mig.1.profile = 3g.71gb", "gpu.6.mig.1.memory_used = 2GiB"]
for i in range(N):
    CONFIG += ["gpu.%d.temperature = %d" % (i, 30 + i), "gpu.%d.power_mw = %d" % (i, 100000 + 1000 * i),
               "gpu.%d.memory_used = %dGiB" % (i, i)]
CONFIG = "\n".join(CONFIG) + "\n"


def uuid(i):
    return "GPU-fa4e0000-0000-4000-8000-%012d" % i


def key(name, i, extra=""):
    return '%s{gpu="%d",uuid="%s"%s}' % (name, i, uuid(i), extra)


def scrape(port, accept=None):
    """One scrape, answered 200; a 503 (no sample yet, at start-up) is tried again for 10 s, as
    Prometheus would at its next interval."""
    deadline = time.time() + 10
    while True:
        st, hdrs, body = gvtest.http(port, headers={"Accept": accept} if accept else None)
        if st != 503 or time.time() > deadline:
            break
        time.sleep(0.05)
    check(st == 200, "scrape status %d" % st)
    return hdrs, body.decode()


def test_values_and_promtool():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0"])
    try:
        gvtest.wait_for(lambda: "gpuvet_gpu_info{" in scrape(srv.port)[1], 10, "a first sample")
        utils, energy = set(), []
        for _ in range(4):
            hdrs, text = scrape(srv.port)
            check(hdrs.get("content-type", "").startswith("text/plain; version=0.0.4"), "content type %s" % hdrs)
            v = gvtest.series(text)
            for i in range(N):
                check(v.get(key("gpuvet_gpu_temperature_celsius", i)) == 30 + i, "temperature of GPU %d" % i)
                # the HBM temperature (the fake's 43 C); absent, never 0, where NVML has no sensor
                check(v.get(key("gpuvet_gpu_memory_temperature_celsius", i)) == (None if i == 6 else 43),
                      "memory temperature of GPU %d" % i)
                check(v.get(key("gpuvet_gpu_power_watts", i)) == 100 + i, "power of GPU %d" % i)
                check(v.get(key("gpuvet_gpu_memory_used_bytes", i)) == i * 2**30, "memory of GPU %d" % i)
                check(v.get(key("gpuvet_gpu_memory_total_bytes", i)) == 143771 * 2**20, "memory total of GPU %d" % i)
                check(v.get(key("gpuvet_gpu_sm_clock_hertz", i)) == 1980e6, "SM clock of GPU %d" % i)
                u = v.get(key("gpuvet_gpu_utilization_ratio", i))
                check(u in (0.1, 0.2, 0.3), "utilization of GPU %d is %s, not one of the fake's" % (i, u))
                utils.add(u)
            energy.append(v[key("gpuvet_gpu_energy_joules_total", 0)])
            check(v.get(key("gpuvet_gpu_throttle_reason", 3, ',reason="sw_power_cap"')) == 1, "GPU 3 power cap")
            check(v.get(key("gpuvet_gpu_throttle_reason", 0, ',reason="sw_power_cap"')) == 0, "GPU 0 no power cap")
            check(v.get(key("gpuvet_gpu_pcie_link_width", 5)) == 8, "GPU 5 link width")
            check(v.get(key("gpuvet_gpu_processes", 1)) == 1, "GPU 1 process count")
            check(v.get("gpuvet_gpus") == N, "GPU count")
            check(v.get("gpuvet_sampler_up") == 1, "sampler up")
            # GPU 6 in MIG mode: each MIG device with its GPU and compute instance ids and profile
            check(v.get(key("gpuvet_gpu_mig_mode", 6)) == 1 and v.get(key("gpuvet_gpu_mig_mode", 0)) == 0, "MIG mode")
            check(v.get(key("gpuvet_gpu_mig_info", 6, ',gpu_instance_id="5",compute_instance_id="0",'
                            'mig_uuid="MIG-fa4e0006-0000-4000-8000-000000000001",profile="3g.71gb"')) == 1,
                  "MIG device 1 of GPU 6: %s" % [k for k in v if "mig_info" in k])
            check(v.get(key("gpuvet_gpu_mig_memory_used_bytes", 6, ',gpu_instance_id="5",compute_instance_id="0"'))
                  == 2 * 2**30, "MIG device memory")
            info = [k for k in v if k.startswith('gpuvet_gpu_info{gpu="7"')]
            check(len(info) == 1 and 'name="Weird \\"GPU\\" \\\\ 7"' in info[0], "escaped GPU name: %s" % info)
            r = gvtest.promtool(text)
            if r is not None:
                check(r[0] == 0, "promtool: %s" % r[1])
            time.sleep(0.35)
        check(len(utils) > 1, "utilization never changed: %s" % utils)
        check(energy == sorted(energy) and energy[-1] > energy[0], "energy counter not rising: %s" % energy)
        # the Xid the fake delivers through the event API is counted, with NVIDIA's message for the
        # code, and makes GPU 2 non-healthy
        xid = key("gpuvet_gpu_xid_errors_total", 2, ',xid="79",err_msg="GPU has fallen off the bus"')
        v = gvtest.series(gvtest.wait_for(lambda: (lambda t: t if xid in t else None)(scrape(srv.port)[1]), 10, "the Xid 79 event"))
        check(v[xid] == 1, "Xid count")
        check(v[key("gpuvet_gpu_health", 2, ',state="healthy"')] == 0, "GPU 2 still healthy after an Xid")
        check(v[key("gpuvet_gpu_health", 5, ',state="degraded"')] == 1, "GPU 5 (x8 link) not degraded")
        check(v[key("gpuvet_gpu_health", 0, ',state="healthy"')] == 1, "GPU 0 not healthy")
        check(srv.stop() == 0, "exit status on SIGTERM")
    finally:
        srv.stop()


def test_dcgm_names():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0", "--dcgm-compat", "--hostname", "node-7"])
    try:
        text = gvtest.wait_for(lambda: (lambda t: t if "DCGM_FI_DEV_GPU_TEMP{" in t else None)(scrape(srv.port)[1]), 10, "DCGM series")
        v = gvtest.series(text)
        for i in range(N):
            labels = '{gpu="%d",UUID="%s",pci_bus_id="%08X:%02X:00.0",device="nvidia%d",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.159.04"}' % (
                i, uuid(i), 0, 0x18 + 0x20 * i, i)
            check(v.get("DCGM_FI_DEV_GPU_TEMP" + labels) == 30 + i, "DCGM temperature of GPU %d: %s" % (i, labels))
            check(v.get("DCGM_FI_DEV_POWER_USAGE" + labels) == 100 + i, "DCGM power of GPU %d" % i)
            check(v.get("DCGM_FI_DEV_FB_USED" + labels) == i * 1024, "DCGM FB used of GPU %d" % i)
            check(v.get("DCGM_FI_DEV_FB_FREE" + labels) == 143771 - i * 1024, "DCGM FB free of GPU %d" % i)
            check(v.get("DCGM_FI_DEV_SM_CLOCK" + labels) == 1980, "DCGM SM clock of GPU %d" % i)
            check(v.get("DCGM_FI_DEV_GPU_UTIL" + labels) in (10, 20, 30), "DCGM utilization of GPU %d" % i)
            # PCIe replays under DCGM's name, typed counter as dcgm-exporter types it
            check(v.get("DCGM_FI_DEV_PCIE_REPLAY_COUNTER" + labels) == (12 if i == 4 else 0), "DCGM PCIe replays of GPU %d" % i)
        check("# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n" in text, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER not typed counter")
        # GPU 6's MIG devices: their memory with dcgm-exporter's GPU_I_PROFILE and GPU_I_ID
        labels6 = '{gpu="6",UUID="%s",pci_bus_id="%08X:%02X:00.0",device="nvidia6",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.159.04"' % (
            uuid(6), 0, (0x18 + 0x20 * 6) & 0xff)
        check(v.get("DCGM_FI_DEV_FB_USED" + labels6 + ',GPU_I_PROFILE="3g.71gb",GPU_I_ID="5"}') == 2048,
              "DCGM FB used of GPU 6's MIG device: %s" % [k for k in v if "GPU_I_ID" in k])
        # our names stay beside them
        check(v.get(key("gpuvet_gpu_temperature_celsius", 4)) == 34, "our names missing in DCGM mode")
        check(v.get(key("gpuvet_gpu_pcie_replays_total", 4)) == 12, "our PCIe replay counter")
        r = gvtest.promtool(text, allow_dcgm_name=False)
        if r is not None:
            # promtool parses it all (exit 3 is its lint, 1 a parse error); its lint reports DCGM's
            # counters (no "_total": dcgm-exporter's names, typed counter as it types them) and the
            # replay counter's name, whatever its type, and nothing else
            other = [l for l in r[1].splitlines() if l and l not in gvtest.DCGM_NAME_LINT]
            check(not other and r[0] == 3 and all(l in r[1] for l in gvtest.DCGM_NAME_LINT
                                                    if l.startswith("DCGM_FI_DEV_PCIE_REPLAY_COUNTER ")),
                  "promtool (--dcgm-compat): exit %d: %s" % (r[0], other))
        for name in ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"):
            check("# TYPE %s counter\n" % name in text, "%s not typed counter" % name)
        # OpenMetrics: a counter's samples end in _total, so DCGM's name is of type unknown there
        om = scrape(srv.port, "application/openmetrics-text;version=1.0.0")[1]
        check("# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER unknown\n" in om, "DCGM replay counter in OpenMetrics")
    finally:
        srv.stop()
    # modelName: DCGM's camelCase label, the one thing promtool's lint may say
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0", "--dcgm-compat", "--dcgm-model-name"])
    try:
        text = gvtest.wait_for(lambda: (lambda t: t if "DCGM_FI_DEV_GPU_TEMP{" in t else None)(scrape(srv.port)[1]), 10, "DCGM series")
        check(',modelName="NVIDIA H200"' in text, "modelName label missing")
        r = gvtest.promtool(text)
        if r is not None:
            other = [l for l in r[1].splitlines() if l and not re.match(
                r"^DCGM_FI_[A-Z_]+ label names should be written in 'snake_case' not 'camelCase'$", l)]
            check(not other and r[0] in (0, 3), "promtool (--dcgm-model-name): %s" % other)
    finally:
        srv.stop()


def test_openmetrics():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0"])
    try:
        gvtest.wait_for(lambda: "gpuvet_gpu_info{" in scrape(srv.port)[1], 10, "a first sample")
        prom = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
        hdrs, text = scrape(srv.port, prom)
        check(hdrs.get("content-type", "").startswith("application/openmetrics-text; version=1.0.0"),
              "OpenMetrics content type: %s" % hdrs)
        check(text.endswith("# EOF\n") and text.count("# EOF") == 1, "OpenMetrics must end with one # EOF")
        check("# TYPE gpuvet_gpu_energy_joules counter\n" in text, "counter family named without _total")
        check(key("gpuvet_gpu_energy_joules_total", 0) in text, "counter sample keeps _total")
        check(" untyped\n" not in text, "untyped is not an OpenMetrics type")
        hdrs, text = scrape(srv.port, "text/plain")
        check("# EOF" not in text, "text format must not end with # EOF")
    finally:
        srv.stop()


def test_gzip():
    """Content-Encoding gzip when Accept-Encoding allows it: Python's gzip and curl --compressed
    (real clients) read the same exposition, promtool accepts it, about a tenth of the bytes."""
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0", "--dcgm-compat", "--processes"])
    try:
        gvtest.wait_for(lambda: "DCGM_FI_DEV_GPU_TEMP{" in scrape(srv.port)[1], 10, "a first sample")
        st, hdrs, plain = gvtest.http(srv.port)
        check(hdrs.get("vary") == "Accept-Encoding" and "content-encoding" not in hdrs, "identity answer: %s" % hdrs)
        for accept in ("gzip", "deflate, gzip;q=0.5", "*", "x-gzip", "GZIP;q=1.0"):
            st, hdrs, body = gvtest.http(srv.port, headers={"Accept-Encoding": accept})
            check(st == 200 and hdrs.get("content-encoding") == "gzip", "no gzip for Accept-Encoding %r: %s" % (accept, hdrs))
            check(int(hdrs.get("content-length", -1)) == len(body), "Content-Length of the gzip answer")
            text = gzip.decompress(body).decode()  # one gzip member: gzip.decompress would read more
            check(len(gzip.GzipFile(fileobj=io.BytesIO(body)).read()) == len(text.encode()), "one member")
            check(text.startswith("# HELP gpuvet_sampler_up ") and "DCGM_FI_DEV_FB_FREE{" in text, "gzip body: %s" % text[:200])
            check(len(body) * 5 < len(plain), "gzip %d bytes against %d plain" % (len(body), len(plain)))
            check(set(gvtest.series(text)) == set(gvtest.series(plain.decode())), "gzip and identity hold the same series")
        for accept in ("identity", "gzip;q=0", "gzip;q=0, *", "br", "*;q=0"):
            st, hdrs, body = gvtest.http(srv.port, headers={"Accept-Encoding": accept})
            check("content-encoding" not in hdrs and body.startswith(b"# HELP"), "identity for %r: %s" % (accept, hdrs))
        st, hdrs, body = gvtest.http(srv.port, headers={"Accept-Encoding": "gzip",
                                                         "Accept": "application/openmetrics-text;version=1.0.0"})
        om = gzip.decompress(body).decode()
        check(om.endswith("# EOF\n") and hdrs.get("content-type", "").startswith("application/openmetrics-text"), "gzip OpenMetrics")
        r = gvtest.promtool(gzip.decompress(gvtest.http(srv.port, headers={"Accept-Encoding": "gzip"})[2]).decode())
        if r is not None:
            check(r[0] == 0, "promtool on the gunzipped answer: %s" % r[1])
        if shutil.which("curl"):
            c = subprocess.run(["curl", "-sS", "--compressed", "-D", "-", "http://127.0.0.1:%d/metrics" % srv.port],
                               capture_output=True, timeout=20)
            head, _, out = c.stdout.partition(b"\r\n\r\n")
            check(c.returncode == 0 and b"content-encoding: gzip" in head.lower(), "curl --compressed: %s" % c.stderr)
            check(set(gvtest.series(out.decode())) == set(gvtest.series(plain.decode())), "curl --compressed reads the exposition")
        # HEAD: the headers of the gzip answer, no body
        st, hdrs, body = gvtest.http(srv.port, method="HEAD", headers={"Accept-Encoding": "gzip"})
        check(st == 200 and hdrs.get("content-encoding") == "gzip" and body == b"", "HEAD with gzip")
    finally:
        srv.stop()


def test_sampler_failure_serves_last_good():
    # every handle lookup fails after the first samples: the GPUs become unreadable
    cfg = CONFIG + "error.nvmlDeviceGetHandleByIndex = 999\nerror.nvmlDeviceGetHandleByIndex.after = 40\n"
    env, _ = gvtest.fake_env(FAKE, cfg)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"])
    try:
        v = gvtest.series(gvtest.wait_for(lambda: (lambda t: t if "gpuvet_sampler_up 1" in t else None)(scrape(srv.port)[1]), 10, "a good sample"))
        check(v[key("gpuvet_gpu_temperature_celsius", 6)] == 36, "temperature before the failure")
        t = gvtest.wait_for(lambda: (lambda t: t if "gpuvet_sampler_up 0" in t else None)(scrape(srv.port)[1]), 15, "the sampler to fail")
        v1 = gvtest.series(t)
        time.sleep(0.5)
        v2 = gvtest.series(scrape(srv.port)[1])
        # (the sampler reopens NVML after 30 failures in a row: 6 s at this interval)
        check(v2.get("gpuvet_sampler_up") == 0, "sampler recovered too early")
        check(v2[key("gpuvet_gpu_temperature_celsius", 6)] == 36, "last good temperature not served while failing")
        check(v2["gpuvet_sample_age_seconds"] > v1["gpuvet_sample_age_seconds"], "staleness gauge not growing")
        check(v2["gpuvet_sample_age_seconds"] >= 0.4, "staleness gauge too small: %s" % v2["gpuvet_sample_age_seconds"])
        check(v2["gpuvet_sampler_errors_total"] >= 1, "errors not counted")
        st, _, body = gvtest.http(srv.port, "/healthz")
        check(st == 200, "/healthz must stay 200 while the sampler thread makes progress (got %d %s)" % (st, body))
        r = gvtest.promtool(t)
        if r is not None:
            check(r[0] == 0, "promtool during failure: %s" % r[1])
    finally:
        srv.stop()


def test_hung_driver_does_not_hold_scrapes():
    # every temperature call takes 0.2 s: a sample takes 1.6 s against an interval of 0.2 s
    cfg = CONFIG + "hang.nvmlDeviceGetTemperature = 200\n"
    env, _ = gvtest.fake_env(FAKE, cfg)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"])
    try:
        worst, ages = 0, []
        deadline = time.time() + 4
        while time.time() < deadline:
            t0 = time.time()
            st, _, body = gvtest.http(srv.port)
            worst = max(worst, time.time() - t0)
            check(st in (200, 503), "scrape status %d" % st)
            if st == 200:  # 503 until the first sample
                ages.append(gvtest.series(body.decode()).get("gpuvet_sample_age_seconds"))
            time.sleep(0.1)
        check(worst < 0.5, "a scrape waited %.2f s on a slow driver" % worst)
        check(ages and max(ages) >= 1.0, "the staleness gauge never showed the slow samples: %s" % ages)
        t0 = time.time()
        srv.stop()
        check(time.time() - t0 < 4, "SIGTERM waited %.1f s for the driver" % (time.time() - t0))
    finally:
        srv.stop()


def test_no_answer_without_gpus_at_start_up():
    # a first sample that takes 2.4 s (every temperature call 0.3 s): a scrape meanwhile is
    # answered 503 at once, never 200 without the GPUs (Prometheus would see every GPU vanish at
    # each restart), and the first 200 has them all
    cfg = CONFIG + "hang.nvmlDeviceGetTemperature = 300\n"
    env, _ = gvtest.fake_env(FAKE, cfg)
    srv = gvtest.Server(GPUVET, env, ["--interval", "5", "--check-interval", "0"])
    try:
        answers = []
        deadline = time.time() + 8
        while time.time() < deadline:
            st, hdrs, body = gvtest.http(srv.port)
            text = body.decode()
            answers.append(st)
            if st == 200:
                check("gpuvet_sampler_up 1" in text and text.count("gpuvet_gpu_info{") == 8,
                      "a 200 answer without the GPUs at start-up:\n%s" % text[:1500])
                break
            check(st == 503 and hdrs.get("retry-after") == "1", "status %d before the first sample: %s" % (st, text))
            time.sleep(0.1)
        check(503 in answers and answers[-1] == 200, "answers at start-up: %s" % answers)
    finally:
        srv.stop()


def test_old_driver_missing_symbols():
    basic = os.path.join(os.path.dirname(FAKE), "libfake_nvml_basic.so")
    if not os.path.exists(basic):
        return gvtest.SKIP
    env, _ = gvtest.fake_env(FAKE, CONFIG, {"GPUVET_NVML_LIB": basic})
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0", "--dcgm-compat"])
    try:
        text = gvtest.wait_for(lambda: (lambda t: t if "gpuvet_sampler_up 1" in t else None)(scrape(srv.port)[1]), 10, "a sample")
        v = gvtest.series(text)
        check(v.get(key("gpuvet_gpu_memory_total_bytes", 3)) == 143771 * 2**20, "memory total from the basic library")
        check(key("gpuvet_gpu_temperature_celsius", 3) not in v, "a temperature the library cannot give")
        r = gvtest.promtool(text)
        if r is not None:
            check(r[0] == 0, "promtool with the basic library: %s" % r[1])
    finally:
        srv.stop()


def test_no_nvml_at_all():
    env, _ = gvtest.fake_env(FAKE, CONFIG, {"GPUVET_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"})
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"])
    try:
        # the first sample fails at once: from then on the answer is the status, sampler down
        text = gvtest.wait_for(lambda: (lambda r: r[2].decode() if r[0] == 200 else None)(gvtest.http(srv.port)), 10,
                               "a first sample")
        v = gvtest.series(text)
        check(v.get("gpuvet_sampler_up") == 0, "sampler up without NVML")
        check("gpuvet_gpu_" not in text, "GPU series without NVML")
        r = gvtest.promtool(text)
        if r is not None:
            check(r[0] == 0, "promtool without NVML: %s" % r[1])
    finally:
        srv.stop()


def test_loopback_by_default():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    # the documented default port may be taken on a shared machine; the address is what matters
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", 10134))
        free = True
    except OSError:
        free = False
    finally:
        probe.close()
    if not free:
        print("  port 10134 is taken here: checking the default address with --listen unset is not possible")
        return gvtest.SKIP
    err = tempfile.TemporaryFile()
    p = subprocess.Popen([GPUVET, "serve", "--check-interval", "0"], env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        def line():
            err.seek(0)
            return re.search(r"serving http://(\S+)/metrics", err.read().decode())
        m = gvtest.wait_for(line, 10, "the serving line")
        check(m.group(1) == "127.0.0.1:10134", "default address is %s" % m.group(1))
        listeners = []
        for f in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                rows = open(f).read().splitlines()[1:]
            except OSError:
                continue
            for r in rows:
                cols = r.split()
                if cols[3] == "0A" and cols[1].endswith(":%04X" % 10134):
                    listeners.append(cols[1])
        check(listeners == ["0100007F:%04X" % 10134], "listening sockets on 10134: %s" % listeners)
    finally:
        p.terminate()
        p.wait(5)


def test_endpoints():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0"])
    try:
        gvtest.wait_for(lambda: gvtest.http(srv.port, "/healthz")[0] == 200, 10, "/healthz 200")
        st, _, body = gvtest.http(srv.port, "/")
        check(st == 200 and b"/metrics" in body, "index page")
        check(gvtest.http(srv.port, "/nope")[0] == 404, "404 for unknown paths")
        check(gvtest.http(srv.port, "/metrics", method="POST")[0] == 405, "405 for POST")
        st, hdrs, body = gvtest.http(srv.port, "/metrics", method="HEAD")
        check(st == 200 and body == b"", "HEAD: status %d, %d body bytes" % (st, len(body)))
    finally:
        srv.stop()


def test_textfile():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    d = tempfile.mkdtemp(prefix="gpuvet-textfile-")
    try:
        r = subprocess.run([GPUVET, "serve", "--textfile", d, "--once", "--check-interval", "0"], env=env,
                           capture_output=True, timeout=30)
        check(r.returncode == 0, "textfile --once: %s" % r.stderr)
        check(os.listdir(d) == ["gpuvet.prom"], "files left: %s" % os.listdir(d))
        text = open(os.path.join(d, "gpuvet.prom")).read()
        v = gvtest.series(text)
        check(v.get(key("gpuvet_gpu_temperature_celsius", 2)) == 32, "textfile values")
        pr = gvtest.promtool(text)
        if pr is not None:
            check(pr[0] == 0, "promtool on the textfile: %s" % pr[1])
        # a running writer replaces the file whole: every read parses
        p = subprocess.Popen([GPUVET, "serve", "--textfile", d, "--interval", "0.05", "--check-interval", "0"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            seen, deadline = set(), time.time() + 1
            while time.time() < deadline:
                with open(os.path.join(d, "gpuvet.prom")) as f:
                    t = f.read()
                check(t.endswith("\n") and "gpuvet_sampler_up" in t and "gpuvet_gpus 8" in t, "a partial textfile was read")
                seen.add(gvtest.series(t).get("gpuvet_samples_total"))
                time.sleep(0.01)
            check(len(seen) > 3, "textfile not rewritten: %s" % seen)
        finally:
            p.terminate()
            p.wait(5)
        check(sorted(os.listdir(d)) == ["gpuvet.prom"], "temporary files left: %s" % os.listdir(d))
        r = subprocess.run([GPUVET, "serve", "--textfile", "/nonexistent-dir"], env=env, capture_output=True, timeout=10)
        check(r.returncode == 2 and b"nonexistent-dir" in r.stderr, "bad --textfile: %s" % r.stderr)
    finally:
        shutil.rmtree(d)


gvtest.run([test_values_and_promtool,
            test_dcgm_names,
            test_openmetrics,
            test_gzip,
            test_sampler_failure_serves_last_good,
            test_hung_driver_does_not_hold_scrapes,
            test_old_driver_missing_symbols,
            test_no_nvml_at_all,
            test_loopback_by_default,
            test_endpoints,
            test_textfile,
            test_no_answer_without_gpus_at_start_up])
