#!/usr/bin/env python3
"""gpuvet serve while other clients attack it, all on 127.0.0.1 (bounded: at most ~700 attacking
connections, reconnects at most 200 a second, 10 s per attack): idle connections, connections
that trickle one header byte a second (each byte would reset an idle timeout), clients that ask
and never read. Meanwhile a scraper asks for /metrics 20 times a second, each on a new
connection from 127.0.0.1 like a local Prometheus; at least 99% of its scrapes must be answered
in full within 1 s. After the attack the exporter's descriptors are back where they were.

The figures (scrapes answered, p99 latency, RSS and descriptors before, during and after) are
printed; docs/serve.md ("Under abuse") keeps a run of them. With GPUVET_ATTACK_REAL_NVML=1 the
exporter samples the machine's own GPUs instead of the fake NVML (scripts/device/serve_attack.sh)."""
import multiprocessing
import os
import resource
import selectors
import socket
import time

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
CONFIG = "device_count = 8\ngpu.*.util_gpu = 10,20,30\ngpu.*.temperature = 40,50\n"
ASAN = gvtest.sanitized(GPUVET)
ATTACK_S = 10.0
SCRAPE_EVERY_S = 0.05
ANSWER_WITHIN_S = 1.0
RECONNECTS_PER_S = 200
RSS_LIMIT_KIB = 48 * 1024

# a request that never ends: the trickle clients send it one byte a second
TRICKLE = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard) if hard != resource.RLIM_INFINITY else n, hard))


class Attacker:
    """One selector loop that keeps `plan` connections open: (source address, kind, count)."""

    def __init__(self, port, plan):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.want = []  # (source, kind) of every connection to keep
        for source, kind, count in plan:
            self.want += [(source, kind)] * count
        self.conns = {}  # index -> state
        self.connects = 0
        self.closed_by_server = 0
        self.budget = 0.0
        self.last = time.time()

    def open(self, i):
        source, kind = self.want[i]
        s = socket.socket()
        s.setblocking(False)
        if kind == "noread":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((source, 0))
        s.connect_ex(("127.0.0.1", self.port))
        st = {"i": i, "sock": s, "kind": kind, "sent": 0, "next": time.time() + 1.0}
        self.conns[i] = st
        self.sel.register(s, selectors.EVENT_READ if kind != "noread" else selectors.EVENT_WRITE, st)
        self.connects += 1

    def drop(self, st):
        try:
            self.sel.unregister(st["sock"])
        except (KeyError, ValueError):
            pass
        st["sock"].close()
        del self.conns[st["i"]]
        self.closed_by_server += 1

    def send(self, st, data):
        try:
            st["sock"].send(data)
            return True
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            self.drop(st)
            return False

    def run(self, stop):
        for i in range(len(self.want)):
            self.open(i)  # the first wave at once
        while not stop.is_set():
            for key, ev in self.sel.select(timeout=0.05):
                st = key.data
                if st["i"] not in self.conns:
                    continue
                if st["kind"] == "noread":
                    # connected: ask, then never read; a failed send later says it was closed
                    self.sel.unregister(st["sock"])
                    if self.send(st, REQUEST):
                        st["next"] = time.time() + 1.0
                    continue
                try:
                    data = st["sock"].recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.drop(st)
            now = time.time()
            for st in list(self.conns.values()):
                if now < st["next"]:
                    continue
                st["next"] = now + 1.0
                if st["kind"] == "trickle":
                    if self.send(st, TRICKLE[st["sent"] % len(TRICKLE):][:1]):
                        st["sent"] += 1
                elif st["kind"] == "noread" and st["sent"] == 0:
                    if self.send(st, b"X"):  # a pipelined request that never ends: EPIPE once closed
                        pass
            # reconnect what the server closed, at a bounded rate
            self.budget = min(RECONNECTS_PER_S, self.budget + (now - self.last) * RECONNECTS_PER_S)
            self.last = now
            for i in range(len(self.want)):
                if self.budget < 1:
                    break
                if i not in self.conns:
                    self.open(i)
                    self.budget -= 1
        for st in list(self.conns.values()):
            st["sock"].close()


def attack_process(port, plan, stop, result):
    raise_nofile(4096)
    a = Attacker(port, plan)
    a.run(stop)
    result.put((a.connects, a.closed_by_server))


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def scrape(port):
    """(answered in full, seconds) of one scrape on a new connection."""
    t0 = time.time()
    try:
        st, _, body = gvtest.http(port, timeout=ANSWER_WITHIN_S)
    except OSError:
        return False, time.time() - t0
    dt = time.time() - t0
    return st == 200 and b"gpuvet_gpu_info{" in body and dt <= ANSWER_WITHIN_S, dt


def under_attack(name, plan, extra=(), listen="127.0.0.1:0"):
    env, conf = gvtest.fake_env(FAKE, CONFIG)
    if os.environ.get("GPUVET_ATTACK_REAL_NVML") == "1":
        env.pop("GPUVET_NVML_LIB", None)
        env.pop("GPUVET_FAKE_CONFIG", None)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"] + list(extra), listen=listen)
    proc = None
    try:
        gvtest.wait_for(lambda: scrape(srv.port)[0], 10, "a first sample")
        time.sleep(0.3)
        fds0, rss0 = fds(srv.p.pid), srv.rss_kib()
        stop = multiprocessing.Event()
        result = multiprocessing.Queue()
        proc = multiprocessing.Process(target=attack_process, args=(srv.port, plan, stop, result))
        proc.start()
        attackers = sum(n for _, _, n in plan)
        # the attack is on once the exporter holds most of its budget
        gvtest.wait_for(lambda: fds(srv.p.pid) >= fds0 + min(attackers, 512) * 3 // 4, 10, "the attack to take hold")
        lat, ok, fds_peak = [], 0, 0
        t_end = time.time() + ATTACK_S
        while time.time() < t_end:
            good, dt = scrape(srv.port)
            ok += good
            lat.append(dt)
            fds_peak = max(fds_peak, fds(srv.p.pid))
            time.sleep(SCRAPE_EVERY_S)
        rss_peak = srv.hwm_kib()
        stop.set()
        connects, closed = result.get(timeout=10)
        proc.join(10)
        proc = None
        check(srv.alive(), "%s: the exporter died" % name)
        # the attackers are gone: every connection they held is closed
        try:
            gvtest.wait_for(lambda: fds(srv.p.pid) <= fds0, 5, "descriptors back to %d" % fds0)
        except gvtest.Fail:
            pass
        fds1, rss1 = fds(srv.p.pid), srv.rss_kib()
        lat.sort()
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        print("  %s: %d of %d scrapes answered within %.0f s, p99 %.3f s, max %.3f s; %d attackers "
              "(%d connects, %d closed by the exporter); fds %d before, %d peak, %d after; RSS %d KiB before, "
              "peak %d KiB, %d KiB after" % (name, ok, len(lat), ANSWER_WITHIN_S, p99, lat[-1], attackers, connects,
                                            closed, fds0, fds_peak, fds1, rss0, rss_peak, rss1))
        # the exporter's own metrics say what it did
        st, _, body = gvtest.http(srv.port)
        v = gvtest.series(body.decode())
        evicted = v.get('gpuvet_http_connections_closed_total{reason="evicted"}', -1)
        print("  %s: closed by the exporter: %s" % (name, ", ".join(
            "%s %d" % (k.split('"')[1], n) for k, n in sorted(v.items()) if k.startswith("gpuvet_http_connections_closed_total"))))
        check(evicted > 0, "%s: gpuvet_http_connections_closed_total{reason=\"evicted\"} is %s after the attack" % (name, evicted))
        check(fds_peak >= fds0 + min(attackers, 512) * 3 // 4, "%s: the attack never held the exporter's connections" % name)
        check(ok * 100 >= len(lat) * 99, "%s: only %d of %d scrapes answered within %.0f s" % (name, ok, len(lat), ANSWER_WITHIN_S))
        check(fds1 <= fds0, "%s: %d descriptors after the attack, %d before" % (name, fds1, fds0))
        if not ASAN:
            check(rss_peak < RSS_LIMIT_KIB, "%s: peak resident size %d KiB over %d KiB" % (name, rss_peak, RSS_LIMIT_KIB))
    finally:
        if proc is not None:
            stop.set()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
        srv.stop()
        os.unlink(conf)


SPREAD = ["127.0.0.%d" % (10 + i) for i in range(20)]
# one local process (the scraper's own address) over its class's budget, and 20 addresses that
# together are over the whole budget: idle first, then trickling, then non-reading
MIXED = [("127.0.0.1", "idle", 48), ("127.0.0.1", "trickle", 48), ("127.0.0.1", "noread", 16)] + \
        [(a, "idle", 15) for a in SPREAD] + [(a, "trickle", 15) for a in SPREAD]


def test_mixed_attack_loopback():
    under_attack("127.0.0.1, defaults", MIXED)


def test_one_address_without_per_address_budget():
    # what a per-address limit cannot help with: one address over the whole budget
    under_attack("127.0.0.1, --max-connections-per-ip 0",
                 [("127.0.0.1", "trickle", 400), ("127.0.0.1", "idle", 200), ("127.0.0.1", "noread", 16)],
                 ["--max-connections-per-ip", "0"])


def test_mixed_attack_every_interface():
    under_attack("--listen 0.0.0.0", MIXED, listen="0.0.0.0:0")


if __name__ == "__main__":
    raise_nofile(4096)
    multiprocessing.set_start_method("fork")
    gvtest.run([test_mixed_attack_loopback, test_one_address_without_per_address_budget, test_mixed_attack_every_interface])
