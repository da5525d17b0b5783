"""gpuvet serve's NVLink families against the fake NVML (issue 18): per link state, error
counters and payload bytes (rising from sample to sample), and with --dcgm-compat the DCGM
exporter's DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL and _BANDWIDTH_TOTAL; each family once (the rates are GPM's);
promtool accepts both namings. A GPU without NVLink exports no NVLink series."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
CONFIG = ("device_count = 3\n"
          "gpu.0.nvlink.count = 4\ngpu.1.nvlink.count = 4\n"
          "gpu.1.nvlink.2.state = inactive\n"
          "gpu.0.nvlink.1.replay = 7\ngpu.0.nvlink.3.recovery = 2\ngpu.1.nvlink.0.crc_flit = 5\n"
          # GPU 0 link 0 sends 1000 KiB more at every sample
          "gpu.0.nvlink.0.tx_kib = " + ",".join(str(1000 * (k + 1)) for k in range(200)) + "\n"
          "gpu.*.nvlink.rx_kib = 64\n")


def scrape(port):
    """One scrape, answered 200; a 503 (no sample yet: the exporter says so until its first one,
    which "serving" on stderr precedes) is tried again for 10 s, as Prometheus would."""
    deadline = time.time() + 10
    while True:
        status, _, body = gvtest.http(port)
        if status != 503 or time.time() > deadline:
            break
        time.sleep(0.05)
    check(status == 200, "status %s" % status)
    return body.decode()


def key(name, gpu, uuid_label="uuid", extra=""):
    return '%s{gpu="%d",%s="GPU-fa4e0000-0000-4000-8000-00000000000%d"%s}' % (name, gpu, uuid_label, gpu, extra)


def main():
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0", "--dcgm-compat"])
    try:
        tx = key("gpuvet_gpu_nvlink_data_bytes_total", 0, extra=',link="0",direction="tx"')
        gvtest.wait_for(lambda: tx in scrape(srv.port), 15, "a first sample with NVLink")
        first = gvtest.series(scrape(srv.port))[tx]
        gvtest.wait_for(lambda: gvtest.series(scrape(srv.port)).get(tx, 0) > first, 15, "the tx counter rising")
        text = scrape(srv.port)
        v = gvtest.series(text)
        check(v.get(key("gpuvet_gpu_nvlink_up", 0, extra=',link="0"')) == 1, "GPU 0 link 0 up")
        check(v.get(key("gpuvet_gpu_nvlink_up", 1, extra=',link="2"')) == 0, "GPU 1 link 2 down")
        check(v.get(key("gpuvet_gpu_nvlink_errors_total", 0, extra=',link="1",type="replay"')) == 7, "replay")
        check(v.get(key("gpuvet_gpu_nvlink_errors_total", 0, extra=',link="3",type="recovery"')) == 2, "recovery")
        check(v.get(key("gpuvet_gpu_nvlink_data_bytes_total", 1, extra=',link="3",direction="rx"')) == 64 * 1024,
              "rx bytes")
        check(not any(k.startswith("gpuvet_gpu_nvlink_") and 'gpu="2"' in k for k in v), "GPU 2 has no NVLink")
        dk = [k for k in v if k.startswith("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{") and 'gpu="0"' in k]
        check(len(dk) == 1 and v[dk[0]] == 7, "DCGM replay total: %s" % dk)
        dk = [k for k in v if k.startswith("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{") and 'gpu="1"' in k]
        check(len(dk) == 1 and v[dk[0]] == 5, "DCGM CRC flit total: %s" % dk)
        # BANDWIDTH_TOTAL: TX and RX bytes of every link, the sum of gpuvet's per-link counters
        bw = [k for k in v if k.startswith("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{") and 'gpu="1"' in k]
        per_link = sum(x for k, x in v.items() if k.startswith("gpuvet_gpu_nvlink_data_bytes_total{gpu=\"1\""))
        check(len(bw) == 1 and per_link > 0 and v[bw[0]] == per_link,
              "DCGM NVLink bandwidth total %s, want %s" % ([(k, v[k]) for k in bw], per_link))
        check(not any(k.startswith("DCGM_FI_DEV_NVLINK") and 'gpu="2"' in k for k in v), "GPU 2 has no DCGM NVLink")
        # the labels of every other DCGM family of that GPU (DCGM_FI_DRIVER_VERSION was missing)
        temp = [k for k in v if k.startswith("DCGM_FI_DEV_GPU_TEMP{") and 'gpu="1"' in k]
        check(len(temp) == 1 and dk[0].partition("{")[2] == temp[0].partition("{")[2],
              "DCGM NVLink labels %s differ from DCGM_FI_DEV_GPU_TEMP's %s" % (dk, temp))
        fams = [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")]
        check(len(fams) == len(set(fams)), "a family declared twice: %s" % sorted(f for f in fams if fams.count(f) > 1))
        r = gvtest.promtool(text)
        if r is not None:
            check(r[0] == 0, "promtool: %s" % r[1])
    finally:
        srv.stop()
    print("ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gvtest.Fail as e:
        print("not ok:", e)
        sys.exit(1)
