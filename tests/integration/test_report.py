"""gpuvet report: the page from a history and from JSON documents, every section present, machine
strings escaped, regressions and the driver change marked, bad input refused with exit 2.

    python3 test_report.py GPUVET FAKE_NVML_LIB
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_fixture  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def fail(what):
    print("FAIL:", what)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def no_markup_from_machine(html, what):
    # nothing that came from the machine may open a tag: our page has no script and no img at all
    check("<script" not in html.lower(), what + ": a <script> tag reached the page")
    check("<img" not in html.lower(), what + ": an <img> tag reached the page")
    check("onerror=" not in html.replace("onerror=alert(1)&gt;", ""), what + ": an event handler attribute")


def main():
    gpuvet, fake_nvml = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="gpuvet-report-") as tmp:
        env = report_fixture.make(gpuvet, fake_nvml, tmp, SRC)
        page = os.path.join(tmp, "page.html")

        # from the history
        p = subprocess.run([gpuvet, "report", "-o", page], env=env, stderr=subprocess.PIPE, timeout=60)
        check(p.returncode == 0, "report from the history: exit %d: %s" % (p.returncode, p.stderr))
        check(not os.path.exists(page + ".tmp"), "the temporary file was left behind")
        html = open(page, encoding="utf-8").read()
        for sid in ("machine", "check", "bench", "diag", "history", "tune", "watch"):
            check('<section id="%s">' % sid in html, "section %s missing" % sid)
        no_markup_from_machine(html, "history page")
        check("H200 &lt;script&gt;alert(&quot;gpu&quot;)&lt;/script&gt; &#39;q&#39; &amp; co" in html,
              "the hostile GPU name is not shown escaped")
        check("driver 580.95.05 → 580.159.04" in html, "the driver change is not marked on the time axis")
        check(html.count('<figure class="trend"') >= 2, "no trend charts for two check and two bench runs")
        check(html.count('<figure class="watch"') >= 3, "watch --record samples not drawn")
        check('id="bench-cpu"' in html, "the CPU baseline group is missing")
        check("http://" not in html and "https://" not in html.replace("https://download.pytorch.org", ""),
              "the page refers to the network")

        # from documents: a regression between two bench documents, tune's ranked settings
        page2 = os.path.join(tmp, "docs.html")
        args = [gpuvet, "report", "-o", page2]
        for d in ("check.json", "bench-a.json", "bench-b.json", "tune.json"):
            args += ["--json", os.path.join(tmp, d)]
        p = subprocess.run(args, env=env, stderr=subprocess.PIPE, timeout=60)
        check(p.returncode == 0, "report from documents: exit %d: %s" % (p.returncode, p.stderr))
        html2 = open(page2, encoding="utf-8").read()
        no_markup_from_machine(html2, "document page")
        check('class="regressions"' in html2, "a 20% drop between bench documents is not listed as a regression")
        check('class="regression"' in html2, "the regression is not marked on its trend chart")
        check("% of peak" in html2 and '<svg class="chart bars"' in html2, "no bar against a peak")
        check("Ranked by measured gain" in html2 and "torch.autocast" in html2,
              "tune's settings are not ranked with their code")
        check(re.search(r"AMP [bf][f0-9]+ saves \d+% of the peak GPU memory", html2), "AMP's memory saving is not said")
        check("0 run" not in html2.split("runs read:")[0][-20:], "no runs read from documents")

        # diag documents of three nodes: one table row per node and GPU, every test's status, the
        # failing node's finding with its evidence; a hostile host name stays text
        diag_args = [gpuvet, "report", "-o", os.path.join(tmp, "diag.html")]
        for n, host in enumerate(("node-a", "node-b", "<b>node-c</b>")):
            doc = {"schema": "gpuvet.diag/1", "host": host, "started": "2026-12-01T22:0%d:00Z" % n, "level": 2,
                   "gpus": [{"index": 0, "nvml_index": 0, "name": "NVIDIA H200", "serial": "16540%d" % n,
                             "results": [{"test": "memory", "status": "fail" if n == 2 else "pass",
                                          "metric": "memory.errors", "value": 3 if n == 2 else 0, "unit": None},
                                         {"test": "bandwidth", "status": "pass", "metric": "memory.triad",
                                          "value": 4350 + n, "unit": "GB/s"}]}],
                   "findings": [{"id": "diag.memory-errors", "severity": "fail", "title": "GPU 0: 3 errors over 132.3 GiB",
                                 "evidence": ["own_address pass 2: 3 errors at 0x7f0000001000"]}] if n == 2 else []}
            path = os.path.join(tmp, "diag-%d.json" % n)
            with open(path, "w") as f:
                json.dump(doc, f)
            diag_args += ["--json", path]
        p = subprocess.run(diag_args, env=env, stderr=subprocess.PIPE, timeout=60)
        check(p.returncode == 0, "report from diag documents: exit %d: %s" % (p.returncode, p.stderr))
        html4 = open(os.path.join(tmp, "diag.html"), encoding="utf-8").read()
        diag = html4.split('<section id="diag">', 1)[1].split("</section>", 1)[0]
        check(diag.count("<tr><td>") == 3, "not one row per node and GPU: %s" % diag[:400])
        check("memory.triad 4351 GB/s (pass)" in diag, "a figure with its status is missing")
        check('<span class="fail">memory.errors 3 (fail)' in diag, "the failing test is not marked")
        check("diag.memory-errors" in diag and "0x7f0000001000" in diag, "the finding and its evidence are missing")
        check("&lt;b&gt;node-c&lt;/b&gt;" in diag and "<b>node-c" not in diag, "the host name is not escaped")

        # the same documents twice give the same page (no clock, no randomness)
        page3 = os.path.join(tmp, "docs2.html")
        args[3] = page3
        subprocess.run(args, env=env, stderr=subprocess.DEVNULL, timeout=60, check=True)
        check(open(page3, encoding="utf-8").read() == html2, "the page is not reproducible")

        # bad input: usage errors with the file named, nothing written
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"schema": "something.else/1"}')
        out = os.path.join(tmp, "never.html")
        for argv, text in (([gpuvet, "report", "--json", bad, "-o", out], "bad.json"),
                           ([gpuvet, "report", "--json", os.path.join(tmp, "missing.json"), "-o", out], "missing.json"),
                           ([gpuvet, "report", "--threshold", "abc", "-o", out], "--threshold"),
                           ([gpuvet, "report", "--db", os.path.join(tmp, "nope.db"), "-o", out], "nope.db")):
            p = subprocess.run(argv, env=env, stderr=subprocess.PIPE, timeout=30)
            check(p.returncode == 2, "%s: exit %d, not 2" % (argv[2:], p.returncode))
            check(text in p.stderr.decode(), "%s: the error does not name %s: %s" % (argv[2:], text, p.stderr))
            check(not os.path.exists(out), "%s: a page was written" % argv[2:])
        with open(bad, "wb") as f:
            f.write(b"\x00\xff garbage {")
        p = subprocess.run([gpuvet, "report", "--json", bad, "-o", out], env=env, stderr=subprocess.PIPE, timeout=30)
        check(p.returncode == 2 and b"not a JSON document" in p.stderr, "garbage is not refused: %s" % p.stderr)

        # an unwritable destination: exit 3, the error names it
        p = subprocess.run([gpuvet, "report", "-o", os.path.join(tmp, "no", "such", "dir.html")], env=env,
                           stderr=subprocess.PIPE, timeout=30)
        check(p.returncode == 3 and b"cannot write" in p.stderr, "unwritable output: %d %s" % (p.returncode, p.stderr))
    print("report: ok")


if __name__ == "__main__":
    main()
