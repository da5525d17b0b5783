"""`check --fast` and the per-boot cache of each GPU's fixed limits (issue "live pipeline", item 7).

On an H200 (driver 580) the eight calls of a GPU's fixed limits (the max PCIe link, the three
temperature thresholds, the max clocks, the default power limit) took 15 ms of check --fast's
50 ms in NVML; they answer the same for the whole boot. The full check asks them and keeps them
in ~/.cache/gpuvet/nvml-limits; --fast takes them from there and does not call NVML for them.

The fake NVML shows which calls were made: each limit call is made to fail with an error code
gpuvet reports, so an error state in --fast's facts means --fast called it.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
BASE = ("device_count = 2\ndriver_version = 580.159.04\ncuda_driver_version = 13000\n"
        "gpu.*.name = NVIDIA H200\ngpu.*.temp_slowdown = 87\ngpu.*.max_sm_clock = 1980\n")
# every limit call fails: a run that makes one shows an error state
LIMIT_CALLS = ("nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
               "nvmlDeviceGetTemperatureThreshold", "nvmlDeviceGetMaxClockInfo",
               "nvmlDeviceGetPowerManagementDefaultLimit")
FAILING = "".join("error.%s = 999\n" % c for c in LIMIT_CALLS)
LIMIT_FACTS = ("pcie_gen_max", "pcie_width_max", "temperature_slowdown_c", "max_sm_clock_mhz")


def run(args, conf, home):
    env, _ = gvtest.fake_env(FAKE, conf)
    env.pop("XDG_CACHE_HOME", None)
    if home is None:
        env.pop("HOME", None)
    else:
        env["HOME"] = home
    r = subprocess.run([GPUVET, "check", "--no-python", "--json"] + args, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(r.returncode in (0, 1), "check %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.decode()))
    return json.loads(r.stdout)["facts"]["nvml"]


def fact(facts, gpu, name):
    return facts.get("gpu.%d.%s" % (gpu, name), {})


def main():
    home = os.path.join(gvtest.tmpdir(), "home")
    os.makedirs(home)
    cache = os.path.join(home, ".cache", "gpuvet", "nvml-limits")

    def test_full_check_fills_the_cache_and_fast_reads_it():
        f = run([], BASE, home)
        check(os.path.exists(cache), "the full check wrote no %s" % cache)
        check(oct(os.stat(cache).st_mode & 0o777) == "0o600", "the cache's mode: %o" % (os.stat(cache).st_mode & 0o777))
        check(fact(f, 0, "limits_from").get("value") == "nvml", "the full check: %s" % fact(f, 0, "limits_from"))
        # --fast with every limit call failing: nothing fails, the values are the cached ones
        g = run(["--fast"], BASE + FAILING, home)
        for gpu in (0, 1):
            lf = fact(g, gpu, "limits_from")
            check(lf.get("value") == "cache" and lf.get("source") == cache, "GPU %d: %s" % (gpu, lf))
            for name in LIMIT_FACTS:
                a, b = fact(f, gpu, name), fact(g, gpu, name)
                check(b.get("state", "ok") == "ok" and a.get("value") == b.get("value"),
                      "GPU %d %s: full check %s, --fast %s (a limit call was made)" % (gpu, name, a, b))
        check(fact(g, 0, "temperature_slowdown_c").get("value") == 87, "%s" % fact(g, 0, "temperature_slowdown_c"))

    def test_fast_without_a_cache_asks():
        # no home: nothing cached, every limit asked (and here failing, as NVML says)
        g = run(["--fast"], BASE + FAILING, None)
        check(fact(g, 0, "limits_from").get("value") == "nvml", "%s" % fact(g, 0, "limits_from"))
        check(fact(g, 0, "max_sm_clock_mhz").get("state") == "error",
              "no cache, failing call: %s" % fact(g, 0, "max_sm_clock_mhz"))

    def test_a_failed_limit_is_not_kept():
        other = os.path.join(gvtest.tmpdir(), "home2")
        os.makedirs(other)
        run(["--fast"], BASE + FAILING, other)
        g = run(["--fast"], BASE, other)
        check(fact(g, 0, "limits_from").get("value") == "nvml", "an error was cached: %s" % fact(g, 0, "limits_from"))
        check(fact(g, 0, "max_sm_clock_mhz").get("value") == 1980, "%s" % fact(g, 0, "max_sm_clock_mhz"))
        # that --fast run asked and kept them: the next one reads them
        g = run(["--fast"], BASE + FAILING, other)
        check(fact(g, 0, "limits_from").get("value") == "cache", "%s" % fact(g, 0, "limits_from"))

    def test_another_driver_is_asked_again():
        g = run(["--fast"], BASE.replace("580.159.04", "580.126.09") + FAILING, home)
        check(fact(g, 0, "limits_from").get("value") == "nvml", "a new driver read the old cache: %s" % fact(g, 0, "limits_from"))

    def test_a_damaged_cache_is_not_believed():
        run([], BASE, home)
        with open(cache) as fh:
            text = fh.read()
        with open(cache, "w") as fh:
            fh.write(text.replace("max_sm_clock_mhz=1,0,1980", "max_sm_clock_mhz=1,0,19x0"))
        g = run(["--fast"], BASE, home)
        check(fact(g, 0, "limits_from").get("value") == "nvml", "a damaged cache was read: %s" % fact(g, 0, "limits_from"))
        with open(cache) as fh:
            check("max_sm_clock_mhz=1,0,1980" in fh.read(), "the damaged cache was not rewritten")

    gvtest.run([test_full_check_fills_the_cache_and_fast_reads_it, test_fast_without_a_cache_asks,
                test_a_failed_limit_is_not_kept, test_another_driver_is_asked_again, test_a_damaged_cache_is_not_believed])


if __name__ == "__main__":
    main()
