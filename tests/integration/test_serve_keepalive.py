#!/usr/bin/env python3
"""gpuvet serve keeps a scrape's connection open (issue 13). Prometheus keeps its connection to
a target and sends the next scrape on it; every answer of gpuvet said "Connection: close"
(libmicrohttpd closes a connection whose answer was queued before the request was read to its
end), so every scrape paid a new TCP connection and the exporter's accept path. Now: several
GETs and HEADs on one connection, each answered in full, the same exposition as on a fresh
connection; a POST is still refused at once and its connection closed (its body is never read).
"""
import os
import socket

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()

CONFIG = "device_count = 2\ngpu.*.util_gpu = 40\n"


def read_answer(f):
    """(status, headers) of one answer read from a socket file."""
    line = f.readline()
    check(line.startswith(b"HTTP/1.1 "), "no status line: %r" % line)
    status = int(line.split()[1])
    headers = {}
    while True:
        h = f.readline()
        check(h, "the connection closed inside the headers")
        if h in (b"\r\n", b"\n"):
            break
        k, _, v = h.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers


def get(f, s, method, path):
    s.sendall(("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % (method, path)).encode())
    status, headers = read_answer(f)
    n = int(headers.get("content-length", "-1"))
    check(n >= 0, "%s %s: no Content-Length: %s" % (method, path, headers))
    body = f.read(n) if method != "HEAD" else b""
    check(len(body) == (n if method != "HEAD" else 0), "%s %s: short body" % (method, path))
    return status, headers, body


def families(text):
    return [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")]


def test_one_connection_many_scrapes():
    env, path = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"])
    try:
        gvtest.wait_for(lambda: b"gpuvet_gpu_temperature_celsius{" in gvtest.http(srv.port)[2], 15, "a first sample")
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        f = s.makefile("rb")
        bodies = []
        for i in range(5):
            status, headers, body = get(f, s, "GET", "/metrics")
            check(status == 200, "scrape %d on one connection: status %d" % (i + 1, status))
            check(headers.get("connection", "").lower() != "close",
                  "scrape %d: the exporter closes the connection after its answer (%s)" % (i + 1, headers))
            bodies.append(body.decode())
        status, headers, body = get(f, s, "HEAD", "/metrics")
        check(status == 200 and headers.get("connection", "").lower() != "close", "HEAD on the same connection: %s" % headers)
        status, _, body = get(f, s, "GET", "/healthz")
        check(status == 200 and body == b"ok\n", "/healthz on the same connection: %d %r" % (status, body))
        s.close()
        # a kept-alive scrape is the exposition a fresh connection gets
        st, _, fresh = gvtest.http(srv.port)
        check(st == 200, "fresh scrape: %d" % st)
        check(families(bodies[-1]) == families(fresh.decode()), "kept-alive and fresh scrapes differ in families")
        check(all("gpuvet_gpu_utilization_ratio{" in b for b in bodies), "a kept-alive scrape lacks the GPU series")
    finally:
        srv.stop()
        os.unlink(path)


def test_post_refused_and_closed():
    env, path = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0"])
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100)
        f = s.makefile("rb")
        status, headers = read_answer(f)
        check(status == 405, "POST: status %d" % status)
        check(headers.get("allow") == "GET, HEAD", "POST: Allow %s" % headers.get("allow"))
        f.read(int(headers.get("content-length", "0")))
        s.settimeout(5)
        check(f.read(1) == b"", "the connection of a refused POST stays open")
        s.close()
    finally:
        srv.stop()
        os.unlink(path)


gvtest.run([test_one_connection_many_scrapes, test_post_refused_and_closed])
