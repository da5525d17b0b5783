"""Who uses each GPU, through the real commands: a machine tree whose GPU processes sit in a
Kubernetes pod (cgroup v2, systemd driver, containerd; the pod's log directories name it) and
in a Slurm step (cgroup v1, proctrack/cgroup; its environment names the user), with the fake
NVML reporting their pids, and a kubelet device-plugin checkpoint (tests/fixtures/kubelet) that
allocates GPU 1 to a pod with no process on it yet. watch --once --json and its text name each
owner; --pod and --job follow one; serve keeps its own GPU series to the GPU's identity and
names the owners in gpuvet_gpu_owner_info (the allocated pod with 0 processes), labels
dcgm-exporter's series with pod/namespace/container and hpc_job as dcgm-exporter does, labels the
per-process series with their owner and folds those past --process-series into pid="other";
promtool accepts it; watch --record keeps the owners in the history.

    python3 test_fleet.py GPUVET FAKE_NVML_LIB
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402

UID = "5f1c2b9e-1234-4abc-9def-0123456789ab"
CID = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
NOTEBOOK_UID = "7a2d3c4e-5678-4bcd-8ef0-1234567890ab"  # tests/fixtures/kubelet/make_checkpoint.py


def put(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)


def tree(root):
    put(root, "proc/100/cgroup",
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n"
        % (UID.replace("-", "_"), CID))
    put(root, "proc/100/comm", "python\n")
    put(root, "proc/100/cmdline", b"python\0train.py\0")
    put(root, "proc/100/stat", "100 (python) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0\n")
    put(root, "var/log/pods/research_trainer-7d9f_%s/trainer/0.log" % UID, "")
    put(root, "var/log/containers/trainer-7d9f_research_trainer-%s.log" % CID, "")
    put(root, "proc/200/cgroup", "4:devices:/slurm/uid_1001/job_4242/step_0/task_0\n")
    put(root, "proc/200/comm", "srun-task\n")
    put(root, "proc/200/cmdline", b"python\0bert.py\0")
    put(root, "proc/200/stat", "200 (srun-task) S 1 200 200 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 6000 0 0\n")
    put(root, "proc/200/environ", b"SLURM_JOB_ID=4242\0SLURM_JOB_USER=alice\0SLURM_STEP_ID=0\0SLURM_JOB_GPUS=0\0")
    put(root, "proc/300/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n")
    put(root, "proc/300/comm", "Xorg\n")
    put(root, "proc/300/stat", "300 (Xorg) S 1 300 300 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7000 0 0\n")
    put(root, "etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1001:1001::/home/alice:/bin/sh\n")
    # the kubelet's allocations: the trainer pod's GPU 0 and a notebook pod's share of GPU 1
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "kubelet",
                           "kubelet_internal_checkpoint")
    put(root, "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", open(fixture, "rb").read())
    put(root, "var/log/pods/research_notebook-x_%s/notebook/0.log" % NOTEBOOK_UID, "")


def main():
    gpuvet, fake = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="gpuvet-fleet-")
    try:
        root = os.path.join(tmp, "root")
        tree(root)
        conf = os.path.join(tmp, "fake.conf")
        with open(conf, "w") as f:
            f.write("device_count = 2\n")
            f.write("gpu.0.processes = 100:python:4GiB;200:python:2GiB;300:Xorg:64MiB:graphics\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LC_ALL": "C",
               "GPUVET_NVML_LIB": fake, "GPUVET_FAKE_CONFIG": conf, "GPUVET_DB": os.path.join(tmp, "h.db")}
        g = [gpuvet, "--root", root]

        # watch --once --json: every process with its owner
        p = subprocess.run(g + ["watch", "--once", "--json"], env=env, stdout=subprocess.PIPE, timeout=60)
        doc = json.loads(p.stdout)
        procs = {x["pid"]: x for x in doc["gpus"][0]["processes"]}
        gvtest.check(procs[100]["owner"] == {"kind": "pod", "namespace": "research", "pod": "trainer-7d9f",
                                              "container": "trainer", "pod_uid": UID, "runtime": "containerd",
                                              "container_id": CID}, "pod owner: %s" % procs[100]["owner"])
        gvtest.check(procs[200]["owner"] == {"kind": "slurm", "job": "4242", "step": "0", "user": "alice",
                                              "job_gpus": "0"}, "slurm owner: %s" % procs[200]["owner"])
        gvtest.check(procs[300]["owner"] is None, "a host process has an owner: %s" % procs[300]["owner"])
        p = subprocess.run(g + ["watch", "--once"], env=env, stdout=subprocess.PIPE, timeout=60)
        text = p.stdout.decode()
        gvtest.check("research/trainer-7d9f/trainer" in text and "slurm 4242.0 (alice)" in text,
                     "the text view does not name the owners:\n" + text)

        # --pod and --job follow one; an unknown one is a usage error
        for args, want in ((["--pod", "trainer-7d9f"], {100}), (["--pod", "research/trainer-7d9f"], {100}),
                           (["--job", "4242"], {200}), (["--job", "4242.0"], {200})):
            p = subprocess.run(g + ["watch", "--once", "--json"] + args, env=env, stdout=subprocess.PIPE, timeout=60)
            doc = json.loads(p.stdout)
            got = {x["pid"] for x in doc["gpus"][0]["processes"]}
            gvtest.check(got == want, "%s shows %s, not %s" % (args, got, want))
        for args in (["--pod", "nope"], ["--job", "1"], ["--pod", "x", "--job", "1"], ["--pod", ""]):
            p = subprocess.run(g + ["watch", "--once"] + args, env=env, stderr=subprocess.PIPE, timeout=60)
            gvtest.check(p.returncode == 2, "%s: exit %d, not 2" % (args, p.returncode))

        # serve (the root goes before the command): the GPU's labels, per-process labels, the cap
        p = subprocess.Popen(g + ["serve", "--listen", "127.0.0.1:0", "--processes", "--process-series", "2",
                                  "--dcgm-compat", "--check-interval", "0"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            port, line = None, b""
            deadline = time.time() + 15
            while port is None and time.time() < deadline:
                line = p.stderr.readline()
                m = re.search(rb"serving http://[^ ]*:(\d+)/metrics", line)
                if m:
                    port = int(m.group(1))
            gvtest.check(port, "serve did not start: %s" % line)
            body = b""
            for _ in range(50):
                status, _, body = gvtest.http(port)
                if b"gpuvet_process_gpu_memory_bytes{" in body:
                    break
                time.sleep(0.1)
            m = body.decode()
        finally:
            p.terminate()
            p.wait(10)
        lines = m.splitlines()
        temps = [l for l in lines if l.startswith("gpuvet_gpu_temperature_celsius{")]
        gvtest.check(len(temps) == 2 and all(re.match(r'^[^{]+\{gpu="\d",uuid="[^"]+"\} ', l) for l in temps),
                     "gpuvet's GPU series carry more than the GPU's identity: %s" % temps)
        owners = sorted(l for l in lines if l.startswith("gpuvet_gpu_owner_info{"))
        u0, u1 = "GPU-fa4e0000-0000-4000-8000-000000000000", "GPU-fa4e0000-0000-4000-8000-000000000001"
        want = sorted([
            'gpuvet_gpu_owner_info{gpu="0",uuid="%s",kind="pod",namespace="research",pod="trainer-7d9f",'
            'container="trainer",pod_uid="%s"} 1' % (u0, UID),
            'gpuvet_gpu_owner_info{gpu="0",uuid="%s",kind="slurm",job_id="4242",user="alice"} 1' % u0,
            'gpuvet_gpu_owner_info{gpu="1",uuid="%s",kind="pod",namespace="research",pod="notebook-x",'
            'container="notebook",pod_uid="%s"} 1' % (u1, NOTEBOOK_UID)])
        gvtest.check(owners == want, "owner series:\n%s\nnot\n%s" % ("\n".join(owners), "\n".join(want)))
        gvtest.check('gpuvet_gpu_owner_processes{gpu="1",uuid="%s",kind="pod",namespace="research",pod="notebook-x",'
                     'container="notebook",pod_uid="%s"} 0' % (u1, NOTEBOOK_UID) in lines,
                     "the allocated pod's process count is not 0")
        gvtest.check("gpuvet_kubelet_checkpoint_up 1" in lines, "the checkpoint was not read")
        dcgm = [l for l in lines if l.startswith("DCGM_FI_DEV_GPU_TEMP{")]
        d0 = [l for l in dcgm if 'gpu="0"' in l]
        gvtest.check(d0 and 'pod="trainer-7d9f"' in d0[0] and 'namespace="research"' in d0[0]
                     and 'container="trainer"' in d0[0] and 'hpc_job="4242"' in d0[0],
                     "the DCGM series of GPU 0 lack dcgm-exporter's owner labels: %s" % d0)
        d1 = [l for l in dcgm if 'gpu="1"' in l]
        gvtest.check(d1 and 'pod="notebook-x"' in d1[0] and "hpc_job=" not in d1[0],
                     "the DCGM series of GPU 1 lack its allocated pod: %s" % d1)
        procs = [l for l in lines if l.startswith("gpuvet_process_gpu_memory_bytes{")]
        gvtest.check(len(procs) == 3, "2 process series and one pid=other expected: %s" % procs)
        gvtest.check(any('pid="100"' in l and 'pod="trainer-7d9f"' in l and 'kind="pod"' in l for l in procs),
                     "process 100 unlabelled")
        gvtest.check(any('pid="200"' in l and 'job_id="4242"' in l and 'user="alice"' in l for l in procs),
                     "process 200 unlabelled")
        gvtest.check(any('pid="other"' in l for l in procs), "no pid=other series past the cap")
        gvtest.check("gpuvet_process_series_folded 1" in m, "the folded count is not 1")
        if shutil.which("promtool"):
            pt = subprocess.run(["promtool", "check", "metrics"], input=body, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=60)
            bad = [l for l in pt.stdout.decode().splitlines() if "modelName" not in l and l.strip()
                   and l not in gvtest.DCGM_NAME_LINT]
            gvtest.check(pt.returncode == 0 or not bad, "promtool: %s" % pt.stdout.decode())

        # watch --record keeps who held each GPU
        p = subprocess.run(g + ["watch", "--record", "--interval", "0.2", "--count", "2"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        gvtest.check(p.returncode == 0, "watch --record: %s" % p.stderr)
        p = subprocess.run([gpuvet, "history", "show", "latest", "--json"], env=env, stdout=subprocess.PIPE, timeout=60)
        run = json.loads(p.stdout)
        gvtest.check(run["meta"].get("gpu.0.owners") == "research/trainer-7d9f/trainer; slurm 4242.0 (alice)",
                     "history: %s" % run["meta"])
        print("fleet: ok")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except gvtest.Fail as e:
        print("FAIL:", e)
        sys.exit(1)
