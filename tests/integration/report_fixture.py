"""A machine's history for the report tests, made by gpuvet itself against the fake NVML: two
check runs (the driver upgraded between them), two quick bench runs (CPU figures; the fake GPU
has no cuBLASLt), a watch --record run, and JSON documents of check, bench (the second one 20%
slower: a regression) and tune (from the hand-written probe fixture). Hostile strings ride along:
a GPU name and a process name holding <script>, an <img onerror> and quotes."""
import json
import os
import subprocess

HOSTILE_GPU = 'H200 <script>alert("gpu")</script> \'q\' & co'
HOSTILE_PROC = "<img src=x onerror=alert(1)>"


def run(cmd, env, **kw):
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, **kw)


def make(gpuvet, fake_nvml, tmp, src):
    """Fills tmp: history.db and check.json, bench-a.json, bench-b.json, tune.json. Returns env."""
    fake_cuda = os.path.join(os.path.dirname(fake_nvml), "libfake_cuda.so")
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "LC_ALL": "C",
        "GPUVET_DB": os.path.join(tmp, "history.db"),
        "GPUVET_NVML_LIB": fake_nvml,
        "GPUVET_CUDA_LIB": fake_cuda,
        "GPUVET_REPORT_TIME": "2026-12-01T00:00:00Z",
    }
    conf = os.path.join(tmp, "fake.conf")

    def fake(driver, process):
        with open(conf, "w") as f:
            f.write("device_count = 2\n")
            f.write("driver_version = %s\n" % driver)
            f.write("gpu.0.name = %s\n" % HOSTILE_GPU)
            if process:  # check names it; bench would refuse the busy GPU
                f.write("gpu.0.processes = %d:%s:4GiB\n" % (os.getpid(), HOSTILE_PROC))
            f.write("gpu.*.utilization_gpu = 10,50,90\n")
        env["GPUVET_FAKE_CONFIG"] = conf

    for driver in ("580.95.05", "580.159.04"):
        for args in (["check", "--no-python"], ["bench", "--quick"]):
            fake(driver, args[0] == "check")
            p = run([gpuvet] + args, env)
            assert p.returncode in (0, 1), (args, p.returncode, p.stderr)
    p = run([gpuvet, "watch", "--record", "--interval", "0.2", "--count", "4"], env)
    assert p.returncode == 0, p.stderr

    docs = dict(env, GPUVET_NO_HISTORY="1")
    p = run([gpuvet, "check", "--json", "--no-python"], docs)
    with open(os.path.join(tmp, "check.json"), "wb") as f:
        f.write(p.stdout)
    p = run([gpuvet, "bench", "--quick", "--json"], docs)
    bench = json.loads(p.stdout)
    bench["started"] = 1764547200  # 2025-12-01: both documents at known times
    # The fake GPU gives no figure with a peak: give the CPU GEMMs one (made up, for the bars)
    for fig in bench["figures"]:
        if fig["id"].startswith("cpu.gemm") and fig.get("value"):
            fig["peak"] = fig["value"] * 4
            fig["pct_peak"] = 25.0
    with open(os.path.join(tmp, "bench-a.json"), "w") as f:
        json.dump(bench, f)
    for fig in bench["figures"]:
        if fig.get("value") is not None and not fig.get("skipped"):
            fig["value"] *= 1.25 if fig.get("lower_is_better") else 0.8
    bench["started"] += 86400
    with open(os.path.join(tmp, "bench-b.json"), "w") as f:
        json.dump(bench, f)
    fixture = os.path.join(src, "tests", "fixtures", "tune", "h200-full.json")
    p = run([gpuvet, "tune", "--from", fixture, "--json"], docs)
    assert p.returncode in (0, 1), p.stderr
    with open(os.path.join(tmp, "tune.json"), "wb") as f:
        f.write(p.stdout)
    return env
