"""NVLink error counters through the history (issue 18): a check keeps each GPU's link counters,
the next check of the same machine compares with them.

- a first check with counters already non-zero says nvlink.errors (info), not errors-grew;
- a second check after CRC errors grew on one link names that link and the growth (warn);
- a third check after a recovery error says fail;
- after a driver reload (counters lower than before) nothing is reported;
- the GPUs are matched by UUID: the same counters on GPUs listed in another order are not growth;
- a check with --no-history neither reads nor writes the history.

Every database lives in a temporary directory that is removed at the end.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
BASE = "device_count = 2\ngpu.*.nvlink.count = 18\n"


def run(tmp, conf, *extra):
    env, cfg = gvtest.fake_env(FAKE, BASE + conf)
    env.pop("GPUVET_NO_HISTORY", None)
    env["GPUVET_DB"] = os.path.join(tmp, "history.db")
    env["HOME"] = tmp
    try:
        p = subprocess.run([GPUVET, "check", "--json", "--fast"] + list(extra), env=env, capture_output=True,
                           timeout=60)
    finally:
        os.unlink(cfg)
    doc = json.loads(p.stdout)
    return {f["id"]: f for f in doc["findings"]}, doc


def main():
    tmp = tempfile.mkdtemp(prefix="gpuvet-nvlink-")
    try:
        fs, _ = run(tmp, "gpu.1.nvlink.5.crc_flit = 12\n")
        check("nvlink.errors" in fs and "nvlink.errors-grew" not in fs, "first check: %s" % sorted(fs))

        fs, doc = run(tmp, "gpu.1.nvlink.5.crc_flit = 40\n")
        g = fs.get("nvlink.errors-grew")
        check(g is not None, "second check: no errors-grew in %s" % sorted(fs))
        check(g["severity"] == "warn", "CRC growth is a warning: %s" % g["severity"])
        check(any("link 5: CRC flit errors 12 -> 40 (+28)" in e for e in g["evidence"]), "evidence: %s" % g["evidence"])
        check(not any("GPU 0" in e for e in g["evidence"]), "GPU 0 did not change: %s" % g["evidence"])

        fs, _ = run(tmp, "gpu.1.nvlink.5.crc_flit = 40\ngpu.0.nvlink.2.recovery = 1\n")
        g = fs.get("nvlink.errors-grew")
        check(g is not None and g["severity"] == "fail", "recovery: %s" % (g and g["severity"]))
        check(any("link 2: recovery errors 0 -> 1" in e for e in g["evidence"]), "evidence: %s" % g["evidence"])

        fs, _ = run(tmp, "gpu.1.nvlink.5.crc_flit = 40\ngpu.0.nvlink.2.recovery = 1\n")
        check("nvlink.errors-grew" not in fs, "unchanged counters: %s" % sorted(fs))

        fs, _ = run(tmp, "gpu.1.nvlink.5.crc_flit = 3\n")
        check("nvlink.errors-grew" not in fs and "nvlink.errors" not in fs, "after a reload: %s" % sorted(fs))

        # the same GPUs in the other order (their UUIDs swap indexes): no growth
        swap = ("gpu.0.uuid = GPU-fa4e0000-0000-4000-8000-000000000001\n"
                "gpu.1.uuid = GPU-fa4e0000-0000-4000-8000-000000000000\n")
        fs, _ = run(tmp, "gpu.1.nvlink.5.crc_flit = 3\n")
        fs, _ = run(tmp, swap + "gpu.0.nvlink.5.crc_flit = 3\n")
        check("nvlink.errors-grew" not in fs, "reordered GPUs: %s" % sorted(fs))

        # --no-history: the counters of a check that grew are not compared, and not stored
        fs, _ = run(tmp, swap + "gpu.0.nvlink.5.crc_flit = 99\n", "--no-history")
        check("nvlink.errors-grew" not in fs, "--no-history read the history: %s" % sorted(fs))
        fs, _ = run(tmp, swap + "gpu.0.nvlink.5.crc_flit = 3\n")
        check("nvlink.errors-grew" not in fs, "--no-history stored its run: %s" % sorted(fs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gvtest.Fail as e:
        print("not ok:", e)
        sys.exit(1)
