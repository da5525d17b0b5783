#!/usr/bin/env python3
"""gpuvet serve under abuse, all on 127.0.0.1: 500 concurrent scrapes, idle and trickling slow
clients, clients that never read, malformed requests, huge headers. The exporter must keep
serving, and its memory must stay bounded."""
import os
import selectors
import socket
import time

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
CONFIG = "device_count = 8\ngpu.*.util_gpu = 10,20,30\ngpu.*.temperature = 40,50\n"
ASAN = gvtest.sanitized(GPUVET)
# the resident size the exporter may reach under any of this (ASan builds keep freed memory)
RSS_LIMIT_KIB = 48 * 1024


def scrape_ok(port, source="127.0.0.1"):
    st, _, body = gvtest.http(port, source=source)
    return st == 200 and b"gpuvet_gpu_info{" in body


def start(extra=()):
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"] + list(extra))
    gvtest.wait_for(lambda: scrape_ok(srv.port), 10, "a first sample")
    return srv


def check_memory(srv, what):
    if ASAN:
        return
    hwm = srv.hwm_kib()
    check(hwm < RSS_LIMIT_KIB, "%s: peak resident size %d KiB over %d KiB" % (what, hwm, RSS_LIMIT_KIB))


def many_scrapes(port, n, sources):
    """n scrapes at once (non-blocking sockets, one selector); returns how many got a full 200."""
    sel = selectors.DefaultSelector()
    conns = []
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.bind((sources[i % len(sources)], 0))
        s.connect_ex(("127.0.0.1", port))
        st = {"sock": s, "out": req, "in": b"", "done": False}
        conns.append(st)
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, st)
    deadline = time.time() + 20
    open_n = n
    while open_n and time.time() < deadline:
        for key, ev in sel.select(timeout=0.5):
            st = key.data
            s = st["sock"]
            try:
                if ev & selectors.EVENT_READ:
                    chunk = s.recv(65536)
                    if chunk:
                        st["in"] += chunk
                        continue
                    raise ConnectionResetError
                if ev & selectors.EVENT_WRITE and st["out"]:
                    k = s.send(st["out"])
                    st["out"] = st["out"][k:]
                    if not st["out"]:
                        sel.modify(s, selectors.EVENT_READ, st)
                continue
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                pass
            sel.unregister(s)
            s.close()
            st["done"] = True
            open_n -= 1
    for st in conns:
        if not st["done"]:
            sel.unregister(st["sock"])
            st["sock"].close()
    return sum(1 for st in conns if st["in"].startswith(b"HTTP/1.1 200") and b"gpuvet_gpu_info{" in st["in"])


def test_500_concurrent_scrapes():
    srv = start()
    try:
        base = srv.rss_kib()
        sources = ["127.0.0.%d" % (10 + i) for i in range(20)]  # 25 from each: under the per-IP limit
        got = many_scrapes(srv.port, 500, sources)
        check(got == 500, "only %d of 500 concurrent scrapes got a full answer" % got)
        check(srv.alive() and scrape_ok(srv.port), "exporter down after 500 connections")
        check_memory(srv, "500 connections")
        print("  RSS %d KiB before, peak %d KiB" % (base, srv.hwm_kib()))
        # connections beyond --max-connections wait in the kernel's listen queue (bounded by
        # its backlog) instead of costing the exporter memory or descriptors
        srv.stop()
        srv = start(["--max-connections", "100", "--max-connections-per-ip", "0"])
        held = []
        for i in range(150):
            c = socket.socket()
            c.connect(("127.0.0.1", srv.port))
            held.append(c)
        time.sleep(0.5)
        fds = len(os.listdir("/proc/%d/fd" % srv.p.pid))
        check(fds <= 100 + 24, "the exporter holds %d descriptors with --max-connections 100" % fds)
        for c in held:
            c.close()
        check(srv.alive() and scrape_ok(srv.port), "exporter down after refusing connections")
    finally:
        srv.stop()


def test_slow_clients():
    srv = start(["--timeout", "2", "--max-connections-per-ip", "16"])
    try:
        # idle connections from one address, more than its share: the extra are refused, the
        # rest dropped after the timeout; other addresses are served all along
        idle = []
        for _ in range(24):
            s = socket.socket()
            s.bind(("127.0.0.77", 0))
            s.connect(("127.0.0.1", srv.port))
            idle.append(s)
        trickle = []
        for _ in range(8):
            s = socket.socket()
            s.bind(("127.0.0.78", 0))
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            trickle.append(s)
        # clients that ask and never read: the answer waits in their socket buffers
        for _ in range(20):
            s = socket.socket()
            s.bind(("127.0.0.79", 0))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 4)
            trickle.append(s)
        t0 = time.time()
        check(scrape_ok(srv.port), "a scrape from another address was not served beside slow clients")
        check(time.time() - t0 < 1, "a scrape took %.1f s beside slow clients" % (time.time() - t0))
        for s in trickle[:8]:  # one byte every half second keeps the timeout from firing
            s.sendall(b"X")
        time.sleep(1.0)
        for s in trickle[:8]:
            s.sendall(b"-")
        time.sleep(1.6)
        # the idle ones are gone: the server closed them
        closed = 0
        for s in idle:
            s.settimeout(0.2)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except (ConnectionResetError, BrokenPipeError):
                closed += 1
            except socket.timeout:
                pass
        check(closed == len(idle), "%d of %d idle connections still open after the timeout" % (len(idle) - closed, len(idle)))
        check(scrape_ok(srv.port) and scrape_ok(srv.port, "127.0.0.77"), "not serving after the slow clients")
        check_memory(srv, "slow clients")
        for s in idle + trickle:
            s.close()
    finally:
        srv.stop()


# (request, whether a 200 would be wrong): garbage must be refused; a request that is
# readable as a GET of /metrics (with a body nobody asked for) may be answered
MALFORMED = [
    (b"\x00\x01\x02\x03garbage\r\n\r\n", True),
    (b"GET\r\n\r\n", True),
    (b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n", True),
    (b"BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n", True),
    (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", True),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", True),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", True),
    (b"GET /%00%ff/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", False),  # "/" after the NUL: the index
    (b"\r\n\r\n\r\n", True),
    (bytes(range(256)) * 8, True),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n", False),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\tfolded: header\r\n\r\n", False),
    (b"GET /metrics HTTP/1.1\nHost: x\n\n", False),
    (b"GET /metrics\r\n\r\n", False),
]


def test_malformed_requests():
    srv = start()
    try:
        for raw, refuse in MALFORMED:
            try:
                st, _, _ = gvtest.http(srv.port, raw=raw, timeout=1)
            except socket.timeout:
                st = -1  # the server waits for more; --timeout ends it
            check(srv.alive(), "exporter died on %r" % raw[:40])
            check(not (refuse and st == 200), "%r was answered 200" % raw[:40])
        check(scrape_ok(srv.port), "not serving after malformed requests")
        check_memory(srv, "malformed requests")
    finally:
        srv.stop()


def test_huge_headers():
    srv = start()
    try:
        for raw in (
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n",
            b"GET /" + b"m" * (256 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 50) for i in range(20000)) + b"\r\n",
        ):
            try:
                st, _, _ = gvtest.http(srv.port, raw=raw, timeout=5)
            except (BrokenPipeError, ConnectionResetError):
                st = 0  # the server closed while we were still sending: refused
            check(st in (0, 400, 413, 414, 431), "huge request got status %d" % st)
            check(srv.alive(), "exporter died on a huge request")
        check(scrape_ok(srv.port), "not serving after huge headers")
        check_memory(srv, "huge headers")
    finally:
        srv.stop()


gvtest.run([test_500_concurrent_scrapes, test_slow_clients, test_malformed_requests, test_huge_headers])
