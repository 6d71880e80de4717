"""TCP probes of an emulated link, run inside the hosts' namespaces (stdlib only):

    probe.py serve PORT                      answers ping-pongs and sinks bulk transfers
    probe.py pingpong IP PORT [--size B] [--count N]
    probe.py bulk IP PORT [--seconds S]
    probe.py alltoall INDEX PORT BYTES START IP,IP,...   (on every host at once)

pingpong prints {"size_bytes", "count", "half_rtt_us": {median, min, p90}}: the one-way
time of a small message through both TCP stacks, the veths and the bridge(s).
bulk streams for S seconds; the server timestamps what arrives and answers with the
received bytes and the rate over the last two thirds of the transfer (TCP's start-up
excluded); the client prints {"bytes", "seconds", "rate_Mbps", "steady_rate_Mbps"}.
alltoall is TCP's own all-to-all: every host sends BYTES to every other host over one
connection each, all starting at the wall-clock time START; it prints {"seconds"} until this
host has sent and received everything. It measures how well concurrent TCP flows share the
links (the fluid ideal is (n - 1) BYTES at the rate). Only the addresses given on the
command line are ever contacted.
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time

CHUNK = 1 << 16
SERIES_STEP_S = 0.01  # a bulk flow's receive series: one point per 10 ms


def _recv_exact(conn, n):
    buf = bytearray()
    while len(buf) < n:
        part = conn.recv(n - len(buf))
        if not part:
            raise ConnectionError("peer closed")
        buf += part
    return bytes(buf)


def _series(marks, step=SERIES_STEP_S):
    """(time, bytes received so far) every `step` seconds and at the end, from the receive
    marks; times are CLOCK_MONOTONIC (perf_counter), one clock for every process on the machine
    whatever its namespace, so several hosts' flows can be set on one time line."""
    out, next_t = [], marks[0][0]
    for t, b in marks:
        if t >= next_t:
            out.append([t, b])
            next_t = t + step
    if out[-1][0] != marks[-1][0]:
        out.append(list(marks[-1]))
    return out


def _serve_one(conn):
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        kind = _recv_exact(conn, 1)
        if kind == b"P":
            size, count = struct.unpack("!II", _recv_exact(conn, 8))
            for _ in range(count):
                conn.sendall(_recv_exact(conn, size))
        elif kind == b"B":
            marks = []  # (time, bytes so far)
            total = 0
            while True:
                part = conn.recv(CHUNK)
                if not part:
                    break
                total += len(part)
                marks.append((time.perf_counter(), total))
            conn.shutdown(socket.SHUT_RD)
            t_first, t_last = marks[0][0], marks[-1][0]
            cut = t_first + (t_last - t_first) / 3
            b0 = next((b for t, b in marks if t >= cut), total)
            t0 = next((t for t, b in marks if t >= cut), t_last)
            steady = (total - b0) * 8 / (t_last - t0) / 1e6 if t_last > t0 else 0.0
            conn.sendall(json.dumps({"bytes": total, "steady_rate_Mbps": steady,
                                     "series": _series(marks)}).encode())


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=_serve_one, args=(conn,), daemon=True).start()


def _connect(ip, port, deadline_s=10.0):
    end = time.time() + deadline_s
    while True:
        try:
            return socket.create_connection((ip, port), timeout=30)
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.05)


def pingpong(ip, port, size, count):
    c = _connect(ip, port)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(b"P" + struct.pack("!II", size, count))
    msg = b"x" * size
    samples = []
    for _ in range(count):
        t0 = time.perf_counter()
        c.sendall(msg)
        _recv_exact(c, size)
        samples.append((time.perf_counter() - t0) / 2 * 1e6)
    c.close()
    warm = sorted(samples[count // 10:])  # the first tenth warms caches and the TCP path
    return {"size_bytes": size, "count": count,
            "half_rtt_us": {"median": warm[len(warm) // 2], "min": warm[0],
                            "p90": warm[int(len(warm) * 0.9)]}}


def bulk(ip, port, seconds):
    c = _connect(ip, port)
    c.sendall(b"B")
    data = b"\0" * (1 << 20)
    sent, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        c.sendall(data)
        sent += len(data)
    c.shutdown(socket.SHUT_WR)
    reply = json.loads(c.makefile().read())
    t_end = time.perf_counter()
    c.close()
    return {"bytes": reply["bytes"], "seconds": t_end - t0,
            "rate_Mbps": reply["bytes"] * 8 / (t_end - t0) / 1e6,
            "steady_rate_Mbps": reply["steady_rate_Mbps"], "series": reply["series"]}


def alltoall(index, port, nbytes, start_at, ips):
    n = len(ips)
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("0.0.0.0", port))
    lst.listen(n)
    incoming = []
    acceptor = threading.Thread(target=lambda: incoming.extend(lst.accept()[0]
                                                               for _ in range(n - 1)))
    acceptor.start()
    outgoing = [_connect(ips[j], port) for j in range(n) if j != index]
    acceptor.join()
    for s in outgoing + incoming:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = b"\0" * nbytes

    def drain(s):
        got = 0
        while got < nbytes:
            part = s.recv(min(CHUNK * 16, nbytes - got))
            if not part:
                raise ConnectionError("peer closed")
            got += len(part)

    while time.time() < start_at:
        time.sleep(0.0005)
    # Every host connects to every other first, so a host that starts late holds back the
    # others' connections too: they begin about together whatever the lateness (each when its
    # own last connection is up); the lateness is recorded.
    late = max(0.0, time.time() - start_at)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=s.sendall, args=(data,)) for s in outgoing]
    threads += [threading.Thread(target=drain, args=(s,)) for s in incoming]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    for s in outgoing + incoming:
        s.close()
    lst.close()
    return {"seconds": seconds, "bytes_per_pair": nbytes, "hosts": n, "late_s": late}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("port", type=int)
    pp = sub.add_parser("pingpong")
    pp.add_argument("ip")
    pp.add_argument("port", type=int)
    pp.add_argument("--size", type=int, default=8)
    pp.add_argument("--count", type=int, default=2000)
    bk = sub.add_parser("bulk")
    bk.add_argument("ip")
    bk.add_argument("port", type=int)
    bk.add_argument("--seconds", type=float, default=3.0)
    aa = sub.add_parser("alltoall")
    aa.add_argument("index", type=int)
    aa.add_argument("port", type=int)
    aa.add_argument("bytes", type=int)
    aa.add_argument("start", type=float)
    aa.add_argument("ips")
    a = ap.parse_args(argv)
    if a.mode == "serve":
        serve(a.port)
    elif a.mode == "pingpong":
        print(json.dumps(pingpong(a.ip, a.port, a.size, a.count)))
    elif a.mode == "alltoall":
        print(json.dumps(alltoall(a.index, a.port, a.bytes, a.start, a.ips.split(","))))
    else:
        print(json.dumps(bulk(a.ip, a.port, a.seconds)))


if __name__ == "__main__":
    main(sys.argv[1:])
