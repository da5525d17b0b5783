#!/usr/bin/env python3
"""gpuvet serve with NVML's GPM counters through the fake NVML: GPU 0 with GPM (Hopper), GPU 1
without (pre-Hopper), GPU 2 with GPM but no NVLink. The native activity families carry the
fake's values as ratios and bytes per second; --dcgm-compat has DCGM's DCGM_FI_PROF_* fields
with dcgm-exporter's labels; nothing is invented where GPM is missing; promtool passes;
--no-gpm leaves the counters unread."""
import os

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()

CONFIG = "\n".join([
    "device_count = 3", "gpu.*.util_gpu = 97", "xid_wait_max_ms = 20",
    "gpu.0.gpm = 1", "gpu.0.gpm.sm_active = 94", "gpu.0.gpm.sm_occupancy = 40", "gpu.0.gpm.tensor_active = 91",
    "gpu.0.gpm.tensor_hmma_active = 90", "gpu.0.gpm.dram_active = 17", "gpu.0.gpm.fp32_active = 3",
    "gpu.0.gpm.fp16_active = 1", "gpu.0.gpm.fp64_active = 0", "gpu.0.gpm.graphics_active = 96",
    "gpu.0.gpm.pcie_tx = 100", "gpu.0.gpm.pcie_rx = 2048", "gpu.0.gpm.nvlink_tx = 1024", "gpu.0.gpm.nvlink_rx = 512",
    "gpu.1.gpm = 0",
    "gpu.2.gpm = 1", "gpu.2.gpm.sm_active = 10", "gpu.2.gpm.nvlink_tx = unsupported", "gpu.2.gpm.nvlink_rx = unsupported",
]) + "\n"


def uuid(i):
    return "GPU-fa4e0000-0000-4000-8000-%012d" % i


def ours(name, i):
    return '%s{gpu="%d",uuid="%s"}' % (name, i, uuid(i))


def dcgm(name, i):
    return '%s{gpu="%d",UUID="%s",pci_bus_id="%08X:%02X:00.0",device="nvidia%d",Hostname="node-9",' \
           'DCGM_FI_DRIVER_VERSION="580.159.04"}' % (name, i, uuid(i), 0, 0x18 + 0x20 * i, i)


def scrape_until(srv, marker):
    def get():
        st, _, body = gvtest.http(srv.port)
        t = body.decode()
        return t if st == 200 and marker in t else None
    return gvtest.wait_for(get, 15, marker)


def close(a, b):
    return a is not None and abs(a - b) <= 1e-9 * max(1, abs(b))


def test_native_and_dcgm_families():
    env, path = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0", "--dcgm-compat", "--hostname", "node-9"])
    try:
        text = scrape_until(srv, "DCGM_FI_PROF_SM_ACTIVE{")
        v = gvtest.series(text)
        check(close(v.get(ours("gpuvet_gpu_sm_active_ratio", 0)), 0.94), "SM active ratio of GPU 0")
        check(close(v.get(ours("gpuvet_gpu_tensor_active_ratio", 0)), 0.91), "tensor active ratio")
        check(close(v.get(ours("gpuvet_gpu_dram_active_ratio", 0)), 0.17), "DRAM active ratio")
        check(close(v.get(ours("gpuvet_gpu_pcie_rx_bytes_per_second", 0)), 2048 * 2**20), "PCIe RX in bytes/s")
        check(close(v.get(ours("gpuvet_gpu_nvlink_tx_bytes_per_second", 0)), 1024 * 2**20), "NVLink TX in bytes/s")
        check(v.get(ours("gpuvet_gpu_gpm_supported", 0)) == 1 and v.get(ours("gpuvet_gpu_gpm_supported", 1)) == 0,
              "GPM support per GPU")
        # GPU 1 has no GPM: no activity series at all, never a zero standing in for "unknown"
        check(not any(k.startswith("gpuvet_gpu_sm_active_ratio") and 'gpu="1"' in k for k in v), "GPU 1 SM active")
        # GPU 2 has GPM but no NVLink: NVLink absent, the rest present
        check(close(v.get(ours("gpuvet_gpu_sm_active_ratio", 2)), 0.10), "GPU 2 SM active")
        check(ours("gpuvet_gpu_nvlink_tx_bytes_per_second", 2) not in v, "GPU 2 without NVLink must have no NVLink series")
        # DCGM names, units (ratios 0-1, bytes/s) and labels
        for name, want in [("DCGM_FI_PROF_SM_ACTIVE", 0.94), ("DCGM_FI_PROF_SM_OCCUPANCY", 0.40),
                           ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.91), ("DCGM_FI_PROF_DRAM_ACTIVE", 0.17),
                           ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", 0.0), ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", 0.03),
                           ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", 0.01), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.96),
                           ("DCGM_FI_PROF_PCIE_TX_BYTES", 100 * 2**20), ("DCGM_FI_PROF_PCIE_RX_BYTES", 2048 * 2**20),
                           ("DCGM_FI_PROF_NVLINK_TX_BYTES", 1024 * 2**20), ("DCGM_FI_PROF_NVLINK_RX_BYTES", 512 * 2**20)]:
            check(close(v.get(dcgm(name, 0)), want), "%s of GPU 0: %s" % (name, v.get(dcgm(name, 0))))
        check(dcgm("DCGM_FI_PROF_SM_ACTIVE", 1) not in v, "no DCGM SM active for GPU 1")
        # the DCGM dashboard's utilization panel: GR_ENGINE_ACTIVE falls back to NVML utilization
        check(close(v.get(dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1)), 0.97), "GR engine fallback of GPU 1")
        r = gvtest.promtool(text)
        if r is not None:
            check(r[0] == 0, "promtool: %s" % r[1])
    finally:
        srv.stop()
        os.unlink(path)


def test_no_gpm():
    env, path = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.3", "--check-interval", "0", "--no-gpm"])
    try:
        text = scrape_until(srv, "gpuvet_gpu_temperature_celsius{")
        check("gpuvet_gpu_sm_active_ratio" not in text and "gpuvet_gpu_gpm_supported" not in text,
              "--no-gpm still shows GPM series")
    finally:
        srv.stop()
        os.unlink(path)


gvtest.run([test_native_and_dcgm_families, test_no_gpm])
