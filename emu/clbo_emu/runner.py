"""Runs a plan (the JSON `clbo validate` writes) on emulated clusters, one after another.

Plan (schema clbo.emu.plan/1):
  {"schema": "clbo.emu.plan/1", "work_dir": DIR, "nice": N,
   "tcp_congestion_control": "reno",     (optional: set in every host's namespace; absent,
                                          the hosts keep the one a namespace inherits)
   "clusters": [{"id": ID,
                 "config": {"topology": "single_switch"|"two_level", "hosts": H,
                            "ranks_per_host": R, "link_Mbps": L,
                            "hosts_per_leaf": K, "uplink_Mbps": U},   (two_level only)
                 "probes": {"pingpong_count": N, "bulk_seconds": S,
                            "tcp_rounds": PATH},   (optional: clbo-tcp-rounds, absolute)
                 "jobs": [{"id": ID, "mpi": true, "np": P, "argv": [...], "timeout_s": T,
                           "map_by": "slot"|"node", "one_host": false}]}]}
Jobs with "mpi": true run under mpirun across the cluster's hosts (mpi.py), or with
"one_host": true all their ranks on host 0; others run inside host 0. Each job's output goes
to DIR/<cluster>/<job>.log. Probes and jobs run at niceness N (default 0; clbo validate asks for -10): the emulated hosts share the machine's
CPUs with whatever else runs there, and a rank that waits milliseconds for a CPU leaves its
link idle; a higher priority keeps other processes from stretching the measured times, while
the ranks, which sleep while the network works, take little CPU from them.

Output: DIR/measured.json (schema clbo.emu.measured/1), written only when every cluster
and job succeeded: per cluster the probes, every job's exit code and wall time, the load
average before and after, the launch settings and the hosts' TCP settings (read back).
Exit codes: 0 done, 1 a job or the emulation failed, 2 a bad plan, 3 the environment cannot
emulate (not root, no CAP_NET_ADMIN, tools missing), 130 stopped by a signal. Whatever
happens, the namespaces, bridges and processes of the run are gone when it exits.
"""

import json
import os
import re
import signal
import sys
import time

from . import lifetime, names, probe, topology
from .cluster import EmuCluster
from .mpi import host_tmpdir, mpirun_argv, write_hostfile, write_launch_files

PROBE_PORT = 5201
# A congestion control's name as the kernel lists it (reno, cubic, bbr, ...).
CONGESTION_CONTROL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
PROBE = os.path.abspath(probe.__file__)
PYTHON = "/usr/bin/python3"


class Stopped(BaseException):
    """Raised by the signal handlers so every `with`/`finally` cleans up."""


def progress(msg):
    sys.stderr.write("[clbo] emu: %s\n" % msg)
    sys.stderr.flush()


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# The steal share over which a job measured a disturbed machine (clbo validate's kStealShare,
# which its plans pass as steal_threshold).
STEAL_THRESHOLD = 0.05


def cpu_ticks():
    """The machine's CPU time so far, per kind (/proc/stat's first line, in ticks)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:1 + len(CPU_FIELDS)]]


def cpu_split(before, after):
    """Each kind's share of the machine's CPU time between two cpu_ticks() readings. On the
    8-rank clusters the kernel's network processing (system: the ranks' socket calls;
    softirq: veth, bridge, htb and TCP receive) takes half the machine during the steps
    against a fifth during their calibration over loopback: the ranks compute more slowly."""
    d = [a - b for a, b in zip(after, before)]
    total = sum(d)
    if total <= 0:  # shorter than a tick: nothing to split
        return None
    return {k: round(v / total, 4) for k, v in zip(CPU_FIELDS, d)}


def _install_handlers():
    def stop(signum, _frame):
        # Block further signals: the cleanup that the exception triggers must run to the end.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        raise Stopped(signal.Signals(signum).name)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, stop)


def validate_plan(plan):
    """Raises ValueError naming the field and value of the first problem."""
    if plan.get("schema") != "clbo.emu.plan/1":
        raise ValueError("schema: %r is not clbo.emu.plan/1" % plan.get("schema"))
    if not isinstance(plan.get("work_dir"), str):
        raise ValueError("work_dir: required")
    if not isinstance(plan.get("nice", 0), int) or not -20 <= plan.get("nice", 0) <= 19:
        raise ValueError("nice: %r is not in -20..19" % plan.get("nice"))
    retries = plan.get("steal_retries", 0)
    if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 3:
        raise ValueError("steal_retries: %r is not in 0..3" % retries)
    threshold = plan.get("steal_threshold", STEAL_THRESHOLD)
    if not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise ValueError("steal_threshold: %r is not in (0, 1)" % threshold)
    cc = plan.get("tcp_congestion_control")
    if cc is not None and (not isinstance(cc, str) or not CONGESTION_CONTROL_NAME.match(cc)):
        raise ValueError("tcp_congestion_control: %r is not a congestion control's name (such "
                         "as reno, cubic or bbr)" % (cc,))
    for i, c in enumerate(plan.get("clusters", [])):
        cfg = c.get("config", {})
        where = "clusters[%d].config" % i
        if cfg.get("topology") not in ("single_switch", "two_level"):
            raise ValueError("%s.topology: %r is not single_switch or two_level" %
                             (where, cfg.get("topology")))
        h = cfg.get("hosts")
        if not isinstance(h, int) or not 2 <= h <= names.MAX_HOSTS:
            raise ValueError("%s.hosts: %r is not in 2..%d" % (where, h, names.MAX_HOSTS))
        if cfg["topology"] == "two_level":
            k = cfg.get("hosts_per_leaf")
            if not isinstance(k, int) or k < 1 or h % k or h // k > names.MAX_LEAVES or h // k < 2:
                raise ValueError("%s.hosts_per_leaf: %r must split %d hosts into 2..%d leaves"
                                 % (where, k, h, names.MAX_LEAVES))
        rounds = c.get("probes", {}).get("tcp_rounds")
        if rounds is not None and not (isinstance(rounds, str) and os.path.isabs(rounds)
                                       and os.path.isfile(rounds)
                                       and os.access(rounds, os.X_OK)):
            raise ValueError("%s.probes.tcp_rounds: %r is not an executable's absolute path" %
                             ("clusters[%d]" % i, rounds))
        for j, job in enumerate(c.get("jobs", [])):
            if not isinstance(job.get("argv"), list) or not job["argv"]:
                raise ValueError("clusters[%d].jobs[%d].argv: required" % (i, j))
            if not isinstance(job.get("one_host", False), bool):
                raise ValueError("clusters[%d].jobs[%d].one_host: %r is not true or false" %
                                 (i, j, job.get("one_host")))
            if job.get("map_by", "slot") not in ("slot", "node"):
                raise ValueError("clusters[%d].jobs[%d].map_by: %r is not slot or node" %
                                 (i, j, job.get("map_by")))


# How many times the link probe is taken again while the hypervisor steals CPU during it
# (run_probes): it lasts bulk_seconds, where measuring the whole cluster again (the plan's
# steal_retries) takes minutes.
LINK_PROBE_STEAL_REPEATS = 2


def until_quiet(measure, threshold, repeats):
    """measure() returns (result, the steal share while it ran); it is called again while the
    share is over threshold, up to `repeats` more times. Returns the result with the least
    steal (the latest of equals) and the other attempts' (share, result), oldest first: a
    probe's rate falls with the CPU stolen during it (4 hosts at 300 Mbit/s, 2026-12-07: 270,
    246 and 233 Mbit/s per flow with 6%, 18% and 25% stolen), and the steal may grow."""
    attempts = []
    while True:
        got, share = measure()
        attempts.append((share, got))
        if share <= threshold or len(attempts) > repeats:
            break
    best = min(range(len(attempts)), key=lambda i: (attempts[i][0], -i))
    return attempts[best][1], [a for i, a in enumerate(attempts) if i != best]


PROBES_STEAL = "probes"  # worst_steal's name for the link probes (every host streaming at once)


def probes_split(record):
    """The machine's CPU split while every host streamed at once (the probe whose rate the
    cluster's preset takes), or None where the record has none."""
    return record.get("probes", {}).get("bulk_all_hosts_at_once_cpu", {}).get("cpu_split")


def probes_steal(record):
    """The share of the CPUs the hypervisor took during probes_split, or None."""
    split = probes_split(record)
    return split.get("steal") if split else None


def worst_steal(record):
    """The job of a cluster's record, or its link probes (PROBES_STEAL), during which the
    hypervisor took the largest share of the machine's CPUs (steal), and that share: (None,
    0.0) when nothing split its CPU time. Stolen CPU during the probes slows the rates every
    case of the cluster is simulated with (4 hosts at 100 Mbit/s streamed at 80 instead of 95
    Mbit/s with 23% stolen, 2026-12-06)."""
    worst = (None, 0.0)
    splits = [(PROBES_STEAL, probes_split(record))]
    splits += [(name, job.get("cpu_split")) for name, job in sorted(record.get("jobs", {}).items())]
    for name, split in splits:
        if split and split.get("steal", 0.0) > worst[1]:
            worst = (name, split["steal"])
    return worst


def niced(argv, nice):
    return (["nice", "-n", str(nice)] if nice else []) + list(argv)


def bytes_at(series, t):
    """Bytes a flow had received at time t, interpolated in its (time, bytes) series."""
    if t <= series[0][0]:
        return series[0][1]
    for (t0, b0), (t1, b1) in zip(series, series[1:]):
        if t <= t1:
            return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
    return series[-1][1]


def uplink_aggregate(flows):
    """The rate an uplink delivered while all its flows were sending: every flow's bytes
    received between the last flow's first byte and the first flow's last byte, over that
    window. Not the sum of the flows' steady rates: TCP shares a bottleneck unevenly (under
    reno two of four flows starved at 3-5 Mbit/s while the others took 100-130), the flows start
    a probe's start-up apart and a starved flow drains its last megabyte long after the
    others stop, so their steady windows do not overlap and their sum exceeded the uplink's
    shaped rate (246 Mbit/s through 200). Nor all the bytes over the whole span: a starved
    flow's retransmission timeouts leave the uplink idle once the others are done."""
    start = max(f["series"][0][0] for f in flows)
    end = min(f["series"][-1][0] for f in flows)
    if end <= start:
        raise lifetime.EmuError("the uplink probe's flows did not overlap (%s)" %
                                [(f["series"][0][0], f["series"][-1][0]) for f in flows])
    total = sum(bytes_at(f["series"], end) - bytes_at(f["series"], start) for f in flows)
    return {"bytes": total, "seconds": end - start, "rate_Mbps": total * 8 / (end - start) / 1e6,
            "definition": "every flow's bytes received while all the flows were sending, over "
                          "that window"}


# TCP's all-to-all on warm connections (clbo-tcp-rounds), per pair: an empty round (what a
# round costs without bytes to carry), the sizes of the collectives' smaller all-pairs
# rounds, where the flows' start-up and the slowest host's tail weigh more, and the long
# burst (warm_rounds' long_bytes, half a second at the rate; none where that is not above
# 256 KiB, 8 hosts at 30 Mbit/s or less). Not smaller: at 16 KiB the loaded round is a few
# tenths of a millisecond longer than the empty one on 8 hosts, too little to tell from the
# processes' wake-ups on 2 cores.
# Five rounds of each; the model leaves out the first, which warms the connections.
WARM_ROUND_SIZES = (8, 65536, 262144)
WARM_ROUND_REPS = 5
WARM_ROUND_PORT = PROBE_PORT + 10


def warm_round_gap(cfg, n, nbytes):
    """Seconds between two rounds of nbytes per pair: twice the fluid time through the busiest
    link (a host's own, or a leaf's uplink) at 90% of its rate, plus 20 ms."""
    busiest = (n - 1) * nbytes * 8 / (cfg["link_Mbps"] * 1e6 * 0.9)
    if cfg["topology"] == "two_level":
        k = cfg["hosts_per_leaf"]
        busiest = max(busiest, k * (n - k) * nbytes * 8 / (cfg["uplink_Mbps"] * 1e6 * 0.9))
    return 2 * busiest + 0.02


def warm_rounds(cfg, program, n, ips, client, result, margin, long_bytes):
    """clbo-tcp-rounds on every host at once, at WARM_ROUND_SIZES and long_bytes per pair;
    see slowest_rounds."""
    sizes = WARM_ROUND_SIZES + ((long_bytes,) if long_bytes > WARM_ROUND_SIZES[-1] else ())
    gaps = [warm_round_gap(cfg, n, b) for b in sizes]
    start = time.time() + margin
    handles = [client(i, [program, str(i), str(WARM_ROUND_PORT),
                          ",".join(str(b) for b in sizes), str(WARM_ROUND_REPS),
                          "%.3f" % start, ",".join("%.4f" % g for g in gaps), ips],
                      direct=True)
               for i in range(n)]
    return slowest_rounds([result(hd, 120 + WARM_ROUND_REPS * sum(gaps)) for hd in handles])


def slowest_rounds(per_host):
    """Per size, each round's time on the slowest host: a round ends when every host has sent
    and received everything."""
    out = []
    for i, first in enumerate(per_host[0]["rounds"]):
        if any(h["rounds"][i]["bytes_per_pair"] != first["bytes_per_pair"] for h in per_host):
            raise lifetime.EmuError("the warm-round probes disagree on their sizes")
        reps = range(len(first["seconds"]))
        out.append({"bytes_per_pair": first["bytes_per_pair"],
                    "seconds": [max(h["rounds"][i]["seconds"][r] for h in per_host) for r in reps],
                    "late_s": [max(h["rounds"][i]["late_s"][r] for h in per_host) for r in reps]})
    return {"hosts": len(per_host), "rounds": out,
            "definition": "TCP's all-to-all on warm connections (clbo-tcp-rounds), rounds at "
                          "scheduled times; each round's time on the slowest host, and how late "
                          "the latest host began it"}


def run_probes(cluster, cfg, spec, folder, nice=0, steal_threshold=STEAL_THRESHOLD):
    """Latency and rate of the emulated links (see probe.py); returns the probe results. The
    link probe (every host streaming at once) is taken again, up to LINK_PROBE_STEAL_REPEATS
    times, while the hypervisor takes over steal_threshold of the CPUs during it, and the
    attempt with the least steal is kept (until_quiet); the others are recorded in
    bulk_all_hosts_at_once_discarded."""
    hosts = cluster.hosts
    out = {}
    servers = [cluster.start(niced([PYTHON, PROBE, "serve", str(PROBE_PORT)], nice), host=i)
               for i in range(len(hosts))]
    try:
        def client(src, args, direct=False):
            """probe.py with args on host src, or (direct) the program args[0] itself."""
            path = os.path.join(folder, "probe-%d.json" % time.monotonic_ns())
            with open(path, "wb"):
                pass
            argv = list(args) if direct else [PYTHON, PROBE] + list(args)
            p = cluster.start(niced(argv, nice), host=src, log=path)
            return p, path

        def result(handle, timeout, keep_series=False):
            """A probe's JSON line; a bulk flow's receive series only where asked for (the
            uplink's, which uplink_aggregate reads; a record keeps none of them)."""
            p, path = handle
            try:
                rc = p.wait(timeout=timeout)
            except Exception:
                rc = 124
            with open(path) as f:
                text = f.read()
            os.remove(path)
            if rc != 0:
                raise lifetime.EmuError("probe failed (exit %d): %s" % (rc, text.strip()[-400:]))
            got = json.loads(text.strip().splitlines()[-1])
            if not keep_series:
                got.pop("series", None)
            return got

        peer = 1
        ip = lambda i: hosts[i][1]  # noqa: E731
        count = spec.get("pingpong_count", 2000)
        secs = spec.get("bulk_seconds", 2.0)
        out["tcp_pingpong"] = result(client(0, ["pingpong", ip(peer), str(PROBE_PORT), "--count",
                                                 str(count)]), 120)
        out["tcp_pingpong"]["pair"] = [0, peer]
        out["bulk_host_link"] = result(client(0, ["bulk", ip(peer), str(PROBE_PORT), "--seconds",
                                                  str(secs)]), secs + 60)
        out["bulk_host_link"]["pair"] = [0, peer]
        # Every host streams to the next at once: when the per-flow rate matches the single
        # flow's, the machine's CPUs are not what limits the links.
        n = len(hosts)

        def stream_all():
            t0, ticks = time.time(), cpu_ticks()
            handles = [client(i, ["bulk", ip((i + 1) % n), str(PROBE_PORT), "--seconds",
                                  str(secs)]) for i in range(n)]
            flows = [result(hd, secs + 60) for hd in handles]
            # What moving these bytes costs the machine's CPUs (the kernel's share: system
            # and softirq), with the probes' start-up: data for a model of the network's CPU.
            cpu = {"wall_s": time.time() - t0, "cpus": os.cpu_count(),
                   "cpu_split": cpu_split(ticks, cpu_ticks())}
            return (flows, cpu), (cpu["cpu_split"] or {}).get("steal", 0.0)

        # The hypervisor taking the CPUs meanwhile would slow the rate every case of the
        # cluster is simulated with: the probe is taken again.
        (flows, cpu), others = until_quiet(stream_all, steal_threshold,
                                           LINK_PROBE_STEAL_REPEATS)
        out["bulk_all_hosts_at_once"] = flows
        out["bulk_all_hosts_at_once_cpu"] = cpu
        if others:
            out["bulk_all_hosts_at_once_discarded"] = [
                {"steal": share, "Mbps_per_flow": [f["steady_rate_Mbps"] for f in got[0]]}
                for share, got in others]
        if cfg["topology"] == "two_level":
            k = cfg["hosts_per_leaf"]
            # Every host of leaf 0 streams to its counterpart on leaf 1 at once: the flows
            # share leaf 0's uplink.
            handles = [client(i, ["bulk", ip(k + i), str(PROBE_PORT), "--seconds", str(secs)])
                       for i in range(k)]
            flows = [result(hd, secs + 60, keep_series=True) for hd in handles]
            out["uplink_aggregate"] = uplink_aggregate(flows)
            for f in flows:
                f.pop("series")
            out["bulk_across_uplink"] = flows
        # TCP's own all-to-all over a burst about as long as a large collective (each host
        # sends half a second's worth at the rate), with the flows' unequal progress.
        per_pair = int(cfg["link_Mbps"] * 1e6 / 8 * 0.5 / (n - 1)) // 65536 * 65536
        ips = ",".join(ip(i) for i in range(n))
        # The start time leaves room for n probes to start in their namespaces (about a tenth
        # of a second each on a loaded machine, launched one after another).
        margin = max(0.75, 0.25 * n)
        if spec.get("tcp_rounds"):
            # On warm connections, from one compiled process per host that polls every
            # socket, as MPI's TCP transport moves the collectives' bytes (since 2026-12-07:
            # the Python probe below ran a thread per socket on fresh connections, and on two
            # clusters whose CPUs the links saturate it took a median 27% and 32% longer).
            out["tcp_alltoall_rounds"] = warm_rounds(cfg, spec["tcp_rounds"], n, ips, client,
                                                     result, margin, per_pair)
        else:
            out["tcp_alltoall"] = []
            for rep in range(3):
                start = time.time() + margin
                handles = [client(i, ["alltoall", str(i), str(PROBE_PORT + 1 + rep),
                                      str(per_pair), "%.3f" % start, ips]) for i in range(n)]
                res = [result(hd, 120) for hd in handles]
                out["tcp_alltoall"].append({"bytes_per_pair": per_pair, "hosts": n,
                                            "seconds": max(r["seconds"] for r in res),
                                            "late_s": max(r.get("late_s", 0.0) for r in res)})
        if cfg.get("ranks_per_host", 1) > 1:
            # Ranks of one host talk over its loopback (TCP, unshaped).
            out["bulk_loopback"] = result(client(0, ["bulk", "127.0.0.1", str(PROBE_PORT),
                                                     "--seconds", str(secs)]), secs + 60)
    finally:
        for s in servers:
            cluster._kill(s)
    return out


def run_cluster(index, total, c, work_dir, nice=0, steal_threshold=STEAL_THRESHOLD,
                congestion_control=None):
    cfg = c["config"]
    folder = os.path.join(work_dir, c["id"])
    os.makedirs(folder, exist_ok=True)
    slot = lifetime.Slot()
    record = {"id": c["id"], "config": cfg, "loadavg_before": loadavg()}
    label = "%s %d hosts x %d ranks, %s Mbit/s" % (cfg["topology"], cfg["hosts"],
                                                   cfg.get("ranks_per_host", 1), cfg["link_Mbps"])
    try:
        s = slot.acquire()
        record["slot"] = s
        t0 = time.time()
        with EmuCluster(cfg, s, congestion_control) as cluster:
            record["startup_s"] = time.time() - t0
            record["tcp"] = cluster.tcp
            record["hosts"] = [{"name": n, "ip": ip} for n, ip, _ in cluster.hosts]
            progress("cluster %d/%d (%s): up in %.1f s" % (index, total, label,
                                                           record["startup_s"]))
            record["nice"] = nice
            record["shaping"] = topology.shaping_record(cfg["link_Mbps"])
            record["probes"] = run_probes(cluster, cfg, c.get("probes", {}), folder, nice,
                                          steal_threshold)
            pp = record["probes"]["tcp_pingpong"]["half_rtt_us"]["median"]
            bk = record["probes"]["bulk_host_link"]["steady_rate_Mbps"]
            stolen = probes_steal(record)
            others = record["probes"].get("bulk_all_hosts_at_once_discarded", [])
            progress("cluster %d/%d: TCP half round trip %.1f us, bulk %.1f Mbit/s%s%s" %
                     (index, total, pp, bk,
                      ", steal %.0f%% while every host streamed" % (100 * stolen)
                      if stolen is not None and stolen > steal_threshold else "",
                      "; the link probe taken %d times, kept the least stolen (the others: %s)" %
                      (len(others) + 1,
                       ", ".join("%.0f%%" % (100 * r["steal"]) for r in others))
                      if others else ""))
            hostfile, agent = write_launch_files(folder, cluster.hosts,
                                                 cfg.get("ranks_per_host", 1))
            subnet = names.subnet(s)
            with open(hostfile) as f:
                record["launch"] = {"hostfile": f.read().splitlines(),
                                    "mpirun": mpirun_argv("HOSTFILE", "AGENT", subnet, "NP", [])}
            record["jobs"] = {}
            jobs = c.get("jobs", [])
            for j, job in enumerate(jobs):
                log = os.path.join(folder, job["id"] + ".log")
                argv = job["argv"]
                if job.get("mpi", True):
                    hosts = hostfile
                    if job.get("one_host", False):
                        hosts = write_hostfile(os.path.join(folder, "hostfile-" + job["id"]),
                                               cluster.hosts[:1], job["np"])
                    argv = mpirun_argv(hosts, agent, subnet, job["np"], argv,
                                       job.get("timeout_s"), job.get("map_by", "slot"))
                env = dict(os.environ, TMPDIR=host_tmpdir(folder, cluster.hosts[0][0]))
                t1, ticks = time.time(), cpu_ticks()
                rc = cluster.run(niced(argv, nice), host=0, timeout=job.get("timeout_s"), log=log,
                                 env=env)
                wall = time.time() - t1
                record["jobs"][job["id"]] = {"rc": rc, "wall_s": wall, "log": log,
                                             "loadavg_after": loadavg(),
                                             "cpu_split": cpu_split(ticks, cpu_ticks())}
                split = record["jobs"][job["id"]]["cpu_split"]
                # The hypervisor taking the CPUs makes the job measure a slower machine.
                stolen = (", steal %.0f%%" % (100 * split["steal"])
                          if split and split["steal"] > steal_threshold else "")
                progress("cluster %d/%d: job %d/%d %s: exit %d in %.1f s (load %.2f%s)" %
                         (index, total, j + 1, len(jobs), job["id"], rc, wall, loadavg()[0],
                          stolen))
                if rc != 0:
                    with open(log, errors="replace") as f:
                        tail = f.read()[-1500:]
                    raise lifetime.EmuError("job %s on cluster %s failed (exit %d); its log %s "
                                            "ends with:\n%s" % (job["id"], c["id"], rc, log, tail))
        record["loadavg_after"] = loadavg()
        progress("cluster %d/%d: down, namespaces and bridges removed" % (index, total))
    finally:
        slot.release()
    return record


def run_plan(plan_path):
    _install_handlers()
    try:
        with open(plan_path) as f:
            plan = json.load(f)
        validate_plan(plan)
    except (OSError, ValueError) as e:
        sys.stderr.write("clbo emu: error: %s: %s\n" % (plan_path, e))
        return 2
    try:
        lifetime.check_environment()
        work_dir = plan["work_dir"]
        records = []
        clusters = plan["clusters"]
        retries = plan.get("steal_retries", 0)
        threshold = plan.get("steal_threshold", STEAL_THRESHOLD)
        for i, c in enumerate(clusters):
            earlier = []
            while True:
                record = run_cluster(i + 1, len(clusters), c, work_dir, plan.get("nice", 0),
                                     threshold, plan.get("tcp_congestion_control"))
                job, share = worst_steal(record)
                if share <= threshold or len(earlier) >= retries:
                    break
                # The hypervisor took the CPUs: the jobs measured a slower machine than the
                # probes describe. Measure the whole cluster again (its files are rewritten).
                progress("cluster %d/%d: the hypervisor took %.0f%% of the CPUs during %s: "
                         "measuring the cluster again (%d of %d)" %
                         (i + 1, len(clusters), 100 * share, job, len(earlier) + 1, retries))
                earlier.append({"worst_job": job, "steal": share,
                                "cpu_splits": {n: j.get("cpu_split")
                                               for n, j in sorted(record["jobs"].items())}})
            if earlier:
                record["earlier_attempts"] = earlier
            records.append(record)
        out = {"schema": "clbo.emu.measured/1", "clusters": records}
        tmp = os.path.join(work_dir, "measured.json.tmp")
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, os.path.join(work_dir, "measured.json"))
        return 0
    except lifetime.EnvironmentUnfit as e:
        sys.stderr.write("clbo emu: error: %s\n" % e)
        return 3
    except lifetime.EmuError as e:
        sys.stderr.write("clbo emu: error: %s\n" % e)
        return 1
    except Stopped as s:
        sys.stderr.write("clbo emu: stopped by %s; the emulated cluster was removed\n" % s)
        return 130
