"""clbo-tcp-rounds on the machine's loopback (127.0.0.1-3, no namespaces, no root): the rounds
of every size, how late each began, and clear errors.

    test_tcp_rounds.py PATH_TO_clbo-tcp-rounds
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clbo_script import fail  # noqa: E402


def run_hosts(exe, port, start, delays, sizes="8,65536", reps=3, gaps="0.05,0.05"):
    ips = ",".join("127.0.0.%d" % (i + 1) for i in range(len(delays)))
    procs = []
    t0 = time.time()
    for i, delay in enumerate(delays):
        while time.time() < t0 + delay:
            time.sleep(0.01)
        procs.append(subprocess.Popen([exe, str(i), str(port), sizes, str(reps), "%.3f" % start,
                                       gaps, ips], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        so, se = p.communicate(timeout=60)
        if p.returncode != 0:
            fail("clbo-tcp-rounds exit %d: %s" % (p.returncode, se))
        out.append(json.loads(so))
    return out


def main():
    exe = os.path.abspath(sys.argv[1])
    port = 40000 + os.getpid() % 20000
    # Three hosts on time: every size has its rounds, each no shorter than its lateness; the
    # last is a long burst, larger than the probe's 1 MiB send buffer (3 MiB per pair).
    hosts = run_hosts(exe, port, time.time() + 1.0, [0, 0, 0], sizes="8,65536,3145728",
                      gaps="0.05,0.05,0.5")
    for h in hosts:
        if h["hosts"] != 3 or [r["bytes_per_pair"] for r in h["rounds"]] != [8, 65536, 3145728]:
            fail("unexpected record %r" % h)
        for r in h["rounds"]:
            if len(r["seconds"]) != 3 or len(r["late_s"]) != 3 or any(
                    s < late or s <= 0 for s, late in zip(r["seconds"], r["late_s"])):
                fail("bad rounds %r" % r)
    print("ok: three hosts ran 3 rounds of 8 B, 64 KiB and 3 MiB per pair")
    # The third host comes up 0.6 s after the set start: the first rounds begin late on every
    # host, and each says so (the reader leaves such rounds out).
    hosts = run_hosts(exe, port + 1, time.time() + 0.2, [0, 0, 0.8])
    for h in hosts:
        first = h["rounds"][0]
        if not first["late_s"][0] > 0.3 or not first["seconds"][0] >= first["late_s"][0]:
            fail("a late round is not reported late: %r" % first)
    print("ok: rounds that began late say how late (%.2f s)" % hosts[0]["rounds"][0]["late_s"][0])
    # Bad input: an exit of 2 with a message that names what is wrong.
    for args, want in (([], "usage"), (["0", "1", "8,x", "3", "0", "0.1", "127.0.0.1,127.0.0.2"],
                                       "bad size"),
                       (["0", "1", "8", "3", "0", "0.1,0.1", "127.0.0.1,127.0.0.2"], "GAPS has 2"),
                       (["5", "1", "8", "3", "0", "0.1", "127.0.0.1,127.0.0.2"], "INDEX")):
        p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=30)
        if p.returncode != 2 or want not in p.stderr:
            fail("%r: exit %d, %r" % (args, p.returncode, p.stderr))
    print("ok: bad arguments exit 2 naming what is wrong")


if __name__ == "__main__":
    main()
