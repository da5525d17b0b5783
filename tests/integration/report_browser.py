"""gpuvet report in a real browser: headless Chromium loads the page, and the DOM it built must
hold every section, its charts (SVG with their titles), the findings with their fix, and no
script element; a screenshot is kept in the build tree (report-*.png) for a person to look at.
Skips (77) where Chromium is not installed.

    python3 report_browser.py GPUVET FAKE_NVML_LIB [OUTDIR]
"""
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_fixture  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Dom(html.parser.HTMLParser):
    """What the browser's serialised DOM holds: elements by tag, sections and their charts."""

    def __init__(self):
        super().__init__()
        self.tags = {}
        self.sections = {}
        self.current = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "section":
            self.current = a.get("id")
            self.sections[self.current] = {}
        elif self.current:
            s = self.sections[self.current]
            s[tag] = s.get(tag, 0) + 1

    def handle_data(self, data):
        self.text.append(data)


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium(exe, args, timeout=90):
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--disable-extensions", "--user-data-dir=" + tempfile.mkdtemp(prefix="gpuvet-chromium-")]
    try:
        return subprocess.run(base + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout)
    finally:
        shutil.rmtree(base[-1].split("=", 1)[1], ignore_errors=True)


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def main():
    gpuvet, fake_nvml = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    outdir = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else os.getcwd())
    exe = browser()
    if not exe:
        print("skip: no chromium (apt-get install chromium)")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="gpuvet-report-") as tmp:
        env = report_fixture.make(gpuvet, fake_nvml, tmp, SRC)
        pages = {"history": os.path.join(tmp, "history.html"), "documents": os.path.join(tmp, "documents.html")}
        subprocess.run([gpuvet, "report", "-o", pages["history"]], env=env, check=True, timeout=60,
                       stderr=subprocess.DEVNULL)
        args = [gpuvet, "report", "-o", pages["documents"]]
        for d in ("check.json", "bench-a.json", "bench-b.json", "tune.json"):
            args += ["--json", os.path.join(tmp, d)]
        subprocess.run(args, env=env, check=True, timeout=60, stderr=subprocess.DEVNULL)
        for kind, page in pages.items():
            p = chromium(exe, ["--dump-dom", "file://" + page])
            check(p.returncode == 0 and p.stdout, "%s: chromium could not load the page" % kind)
            dom = Dom()
            dom.feed(p.stdout.decode("utf-8", "replace"))
            for sid in ("machine", "check", "bench", "history", "tune", "watch"):
                check(sid in dom.sections, "%s: the browser's DOM has no section %s" % (kind, sid))
            check(dom.tags.get("script", 0) == 0, "%s: a script element in the DOM" % kind)
            check(dom.tags.get("img", 0) == 0, "%s: an img element in the DOM" % kind)
            text = "".join(dom.text)
            check('<script>alert("gpu")</script>' in text, "%s: the hostile GPU name is not shown as text" % kind)
            check(dom.sections["check"].get("article", 0) >= 1 and dom.sections["check"].get("pre", 0) >= 1,
                  "%s: no finding with its fix" % kind)
            check(dom.sections["history"].get("svg", 0) >= 1, "%s: no trend chart" % kind)
            if kind == "history":
                check(dom.sections["watch"].get("svg", 0) >= 3, "history: no recorded samples drawn")
                check(dom.sections["bench"].get("table", 0) >= 1, "history: no bench figures")
            else:
                check(dom.sections["bench"].get("svg", 0) >= 1, "documents: no bars against peaks")
                check(dom.sections["tune"].get("table", 0) >= 2, "documents: tune's tables missing")
                check(dom.sections["history"].get("table", 0) >= 1, "documents: the regression table is missing")
            shot = os.path.join(outdir, "report-%s.png" % kind)
            p = chromium(exe, ["--window-size=1100,3200", "--screenshot=" + shot, "file://" + page])
            check(p.returncode == 0 and os.path.getsize(shot) > 10000, "%s: no screenshot" % kind)
            print("%s: ok, screenshot %s" % (kind, shot))


if __name__ == "__main__":
    main()
