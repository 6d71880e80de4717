#!/usr/bin/python3
"""The emulated cluster (emu/): it comes up and down cleanly, MPI runs across its hosts,
leftovers of a killed run are removed before the next one, a signal cleans up, and a bad
plan creates nothing. Skips (exit 77) with the reason where namespaces cannot be created.

    test_emu.py lifecycle|mpi|probe|leftovers|signal|bad-plan|units EMU_DIR [CLBO|TREE_PROBE]

units needs no namespaces (the runner's pure decisions) and never skips.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clbo_script import SKIP, fail, scratch  # noqa: E402


def setup(emu_dir):
    sys.path.insert(0, emu_dir)
    from clbo_emu import lifetime
    try:
        lifetime.check_environment()
    except lifetime.EmuError as e:
        print("SKIP: the emulated cluster cannot run here: %s" % e)
        sys.exit(SKIP)


def leftovers(slot=None):
    from clbo_emu import lifetime, names
    slots = names.SLOTS if slot is None else [slot]
    found = {}
    for s in slots:
        left = (lifetime.slot_shells(s), lifetime.slot_interfaces(s),
                lifetime.marked_namespaces(s))
        if any(left):
            found[s] = left
    return found


def test_lifecycle(emu_dir):
    from clbo_emu import lifetime
    from clbo_emu.cluster import EmuCluster
    from clbo_emu import topology
    cfg = {"topology": "two_level", "hosts": 4, "ranks_per_host": 1, "link_Mbps": 50,
           "hosts_per_leaf": 2, "uplink_Mbps": 50}
    machine_cc = open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
    slot = lifetime.Slot()
    s = slot.acquire()
    try:
        with EmuCluster(cfg, s, congestion_control="reno") as c:
            if len(c.hosts) != 4:
                fail("expected 4 hosts, got %r" % c.hosts)
            # Every host runs the congestion control asked for, in its own namespace.
            if c.tcp.get("congestion_control") != "reno" or c.tcp.get("set_by") != "the plan":
                fail("the hosts' TCP settings: %r" % c.tcp)
            for _, _, pid in c.hosts:
                got = subprocess.run(["mnexec", "-a", str(pid), "sysctl", "-n",
                                      "net.ipv4.tcp_congestion_control"],
                                     capture_output=True, text=True).stdout.strip()
                if got != "reno":
                    fail("a host runs %r, not reno" % got)
            shells, intfs = lifetime.slot_shells(s), lifetime.slot_interfaces(s)
            # 4 hosts + 2 leaves + spine; interfaces in the root namespace: the switch ends of
            # 4 host links and both ends of 2 uplinks, and the 3 bridges.
            if len(shells) != 7:
                fail("expected 7 node shells, found %r" % shells)
            if len(intfs) != 4 + 4 + 3:
                fail("expected 11 root-namespace interfaces, found %r" % intfs)
            # Shaped links carry packets of at most GSO_SEGS frames (htb would let a 64 KB
            # GSO super-packet through an idle link at veth speed: clbo_emu/topology.py).
            for name in intfs:
                info = subprocess.run(["ip", "-d", "link", "show", "dev", name],
                                      capture_output=True, text=True).stdout
                shaped = "htb" in subprocess.run(["tc", "qdisc", "show", "dev", name],
                                                 capture_output=True, text=True).stdout
                if shaped and not re.search(r"gso_max_segs %d\b" % topology.GSO_SEGS, info):
                    fail("shaped interface %s still aggregates packets: %s" % (name, info))
            # Hosts reach each other across the spine, and only their own subnet.
            probe = os.path.join(emu_dir, "clbo_emu", "probe.py")
            srv = c.start(["/usr/bin/python3", probe, "serve", "5201"], host=3)
            out = os.path.join(scratch(), "pp.json")
            rc = c.run(["/usr/bin/python3", probe, "pingpong", c.hosts[3][1], "5201", "--count",
                        "200"], host=0, timeout=60, log=out)
            c._kill(srv)
            if rc != 0:
                fail("ping-pong across the spine failed: %s" % open(out).read())
            routes = subprocess.run(["mnexec", "-a", str(c.hosts[0][2]), "ip", "route"],
                                    capture_output=True, text=True).stdout
            if "default" in routes:
                fail("an emulated host has a default route: %s" % routes)
    finally:
        slot.release()
    left = leftovers(s)
    if left:
        fail("leftovers after a clean exit: %r" % left)
    if open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip() != machine_cc:
        fail("the machine's own congestion control changed")
    print("ok: 4-host two-level cluster up and down, reno on every host, no leftovers")
    # A congestion control a namespace may not set fails the bring-up, which removes itself.
    s = slot.acquire()
    try:
        with EmuCluster(cfg, s, congestion_control="nosuchcc"):
            fail("a cluster came up with congestion control nosuchcc")
    except lifetime.EmuError as e:
        if "tcp_congestion_control" not in str(e) or "nosuchcc" not in str(e):
            fail("the error does not name the field and value: %s" % e)
    finally:
        slot.release()
    if leftovers(s):
        fail("leftovers after a failed bring-up: %r" % leftovers(s))
    print("ok: an unknown congestion control fails the bring-up, naming it; nothing left")


def plan_file(work, jobs, hosts=2, rph=1):
    plan = {"schema": "clbo.emu.plan/1", "work_dir": work,
            "clusters": [{"id": "c0", "config": {"topology": "single_switch", "hosts": hosts,
                                                 "ranks_per_host": rph, "link_Mbps": 100},
                          "probes": {"pingpong_count": 200, "bulk_seconds": 0.5}, "jobs": jobs}]}
    path = os.path.join(work, "plan.json")
    with open(path, "w") as f:
        json.dump(plan, f)
    return path


def run_emu(emu_dir, plan, **kw):
    return subprocess.Popen(["/usr/bin/python3", os.path.join(emu_dir, "clbo-emu"), "run", plan],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_mpi(emu_dir, clbo):
    work = scratch(prefix="clbo-emu-test-")
    out = os.path.join(work, "bench.json")
    jobs = [{"id": "where", "mpi": True, "np": 2, "timeout_s": 60,
             "argv": ["/bin/sh", "-c", "echo rank=$OMPI_COMM_WORLD_RANK "
                      "ip=$(ip -o -4 addr show | grep -o '10\\.77\\.[0-9.]*')"]},
            {"id": "bench", "mpi": True, "np": 2, "timeout_s": 120,
             "argv": [clbo, "bench", "collectives", "--backend", "mpi",
                      "--collective", "allreduce,compressed,pingpong", "-b", "64K", "-e", "64K",
                      "-n", "2", "-w", "1", "-c", "1", "-a", "3", "-J", out]}]
    p = run_emu(emu_dir, plan_file(work, jobs))
    text, _ = p.communicate(timeout=300)
    if p.returncode != 0:
        fail("emulation exit %d:\n%s" % (p.returncode, text))
    log = open(os.path.join(work, "c0", "where.log")).read()
    ips = sorted(line.split("ip=")[1].strip() for line in log.splitlines() if "ip=" in line)
    if len(ips) != 2 or ips[0] == ips[1]:
        fail("the two ranks should run on two emulated hosts, got %r" % log)
    res = json.load(open(out))
    wrong = sum(r["wrong"] for r in res["rows"])
    if wrong or len(res["rows"]) != 3 or res["config"]["p"] != 2:
        fail("bench across 2 hosts: %r" % res["rows"])
    measured = json.load(open(os.path.join(work, "measured.json")))
    tcp = measured["clusters"][0].get("tcp") or {}
    if tcp.get("set_by") != "inherited from the machine" or not tcp.get("congestion_control"):
        fail("a plan without tcp_congestion_control records the inherited one: %r" % tcp)
    rate = measured["clusters"][0]["probes"]["bulk_host_link"]["steady_rate_Mbps"]
    if not 80 <= rate <= 100:
        fail("a 100 Mbit/s link carried %.1f Mbit/s" % rate)
    # Every job records how the machine's CPU time was split while it ran.
    jobs_run = measured["clusters"][0]["jobs"]
    if set(jobs_run) != {"where", "bench"}:
        fail("the emulation's record has jobs %r, expected where and bench" % sorted(jobs_run))
    for job, rec in jobs_run.items():
        split = rec.get("cpu_split") or {}
        if not {"user", "system", "softirq", "idle"} <= set(split) or \
                abs(sum(split.values()) - 1) > 0.01:
            fail("job %s: cpu_split %r" % (job, split))
    cost = measured["clusters"][0]["probes"].get("bulk_all_hosts_at_once_cpu") or {}
    if not (cost.get("wall_s", 0) > 0 and cost.get("cpus", 0) >= 1 and cost.get("cpu_split")):
        fail("the all-hosts bulk probe's CPU cost is not recorded: %r" % cost)
    # A plan without clbo-tcp-rounds measures the long all-pairs burst with the Python probe.
    probes = measured["clusters"][0]["probes"]
    if "tcp_alltoall_rounds" in probes or len(probes.get("tcp_alltoall") or []) != 3:
        fail("without clbo-tcp-rounds: warm rounds %r, Python probe %r" %
             (probes.get("tcp_alltoall_rounds"), probes.get("tcp_alltoall")))
    if leftovers():
        fail("leftovers: %r" % leftovers())
    print("ok: MPI across 2 emulated hosts (%s), results exact, link at %.1f Mbit/s" %
          (", ".join(ips), rate))


def test_leftovers(emu_dir):
    from clbo_emu import lifetime
    # A run killed with SIGKILL cannot clean up; the next one removes what it left.
    work = scratch(prefix="clbo-emu-test-")
    jobs = [{"id": "sleep", "mpi": False, "argv": ["sleep", "60"], "timeout_s": 90}]
    p = run_emu(emu_dir, plan_file(work, jobs), start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and not leftovers():
        time.sleep(0.2)
    time.sleep(3)  # past the probes, into the sleeping job
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    left = leftovers()
    if not left or not any(v[2] for v in left.values()):
        fail("a SIGKILLed run should leave processes in its namespaces for this test: %r" % left)
    slot = lifetime.Slot()
    slot.acquire()
    slot.release()
    lifetime.remove_slot(slot.index)
    if leftovers():
        fail("the next run did not remove the leftovers: %r" % leftovers())
    print("ok: leftovers of a killed run (processes in %d namespace(s), %d interfaces) removed "
          "by the next run" % (sum(len(v[2]) for v in left.values()),
                               sum(len(v[1]) for v in left.values())))


def test_signal(emu_dir):
    work = scratch(prefix="clbo-emu-test-")
    jobs = [{"id": "sleep", "mpi": True, "np": 2, "argv": ["sleep", "60"], "timeout_s": 90}]
    p = run_emu(emu_dir, plan_file(work, jobs))
    deadline = time.time() + 60
    while time.time() < deadline and not leftovers():
        time.sleep(0.2)
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    text, _ = p.communicate(timeout=60)
    if p.returncode != 130:
        fail("SIGTERM: expected exit 130, got %d:\n%s" % (p.returncode, text))
    if leftovers():
        fail("leftovers after SIGTERM: %r" % leftovers())
    if os.path.exists(os.path.join(work, "measured.json")):
        fail("a stopped run wrote measured.json")
    print("ok: SIGTERM mid-job: exit 130, nothing left, no results")


def test_bad_plan(emu_dir):
    work = scratch(prefix="clbo-emu-test-")
    path = plan_file(work, [])
    plan = json.load(open(path))
    plan["clusters"][0]["config"]["topology"] = "ring"
    json.dump(plan, open(path, "w"))
    p = run_emu(emu_dir, path)
    text, _ = p.communicate(timeout=60)
    if p.returncode != 2 or "clusters[0].config.topology" not in text or "ring" not in text:
        fail("bad topology: exit %d, %s" % (p.returncode, text))
    plan["clusters"][0]["config"]["topology"] = "single_switch"
    plan["steal_retries"] = 9
    json.dump(plan, open(path, "w"))
    p = run_emu(emu_dir, path)
    text, _ = p.communicate(timeout=60)
    if p.returncode != 2 or "steal_retries" not in text or "9" not in text:
        fail("bad steal_retries: exit %d, %s" % (p.returncode, text))
    plan["steal_retries"] = 0
    plan["tcp_congestion_control"] = "reno bbr"
    json.dump(plan, open(path, "w"))
    p = run_emu(emu_dir, path)
    text, _ = p.communicate(timeout=60)
    if p.returncode != 2 or "tcp_congestion_control" not in text or "reno bbr" not in text:
        fail("bad tcp_congestion_control: exit %d, %s" % (p.returncode, text))
    plan["tcp_congestion_control"] = "reno"
    plan["clusters"][0]["probes"] = {"tcp_rounds": "build/bin/clbo-tcp-rounds"}  # relative
    json.dump(plan, open(path, "w"))
    p = run_emu(emu_dir, path)
    text, _ = p.communicate(timeout=60)
    if p.returncode != 2 or "clusters[0].probes.tcp_rounds" not in text:
        fail("bad probes.tcp_rounds: exit %d, %s" % (p.returncode, text))
    del plan["clusters"][0]["probes"]
    if leftovers():
        fail("a bad plan created something: %r" % leftovers())
    print("ok: a bad plan is refused (exit 2, names the field) before anything is created")
    # clbo-emu probe: --help prints its options; a missing program is refused, naming why.
    emu = [sys.executable, "-B", os.path.join(emu_dir, "clbo-emu"), "probe"]
    p = subprocess.run(emu + ["--help"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or "--tcp-congestion-control" not in p.stdout:
        fail("clbo-emu probe --help: exit %d, %r" % (p.returncode, p.stdout + p.stderr))
    for args, why in ((["--hosts", "4"], "there is no --"), (["--hosts", "4", "--"],
                                                             "nothing follows --")):
        p = subprocess.run(emu + args, capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or why not in p.stderr:
            fail("clbo-emu probe %s: exit %d, %r" % (" ".join(args), p.returncode, p.stderr))
    if leftovers():
        fail("clbo-emu probe without a program created something: %r" % leftovers())
    print("ok: clbo-emu probe --help lists its options; no program is refused before anything "
          "is created")
    from clbo_emu import runner
    # A disturbed cluster is measured again, up to steal_retries times, and keeps every
    # attempt's splits (run_cluster stood in for: no namespaces needed for the decision).
    shares = iter([0.2, 0.1, 0.01])
    runs = []

    def fake_run_cluster(index, total, c, work_dir, nice=0, steal_threshold=None,
                         congestion_control=None):
        if congestion_control != "reno":
            fail("the plan's congestion control did not reach the cluster: %r" %
                 congestion_control)
        runs.append(c["id"])
        return {"id": c["id"], "jobs": {"bench": {"cpu_split": {"steal": next(shares)}}}}
    real = runner.run_cluster
    runner.run_cluster = fake_run_cluster
    try:
        plan["steal_retries"] = 1
        json.dump(plan, open(path, "w"))
        if runner.run_plan(path) != 0:
            fail("run_plan with a stand-in cluster failed")
    finally:
        runner.run_cluster = real
    rec = json.load(open(os.path.join(work, "measured.json")))["clusters"][0]
    if runs != ["c0", "c0"] or rec["jobs"]["bench"]["cpu_split"]["steal"] != 0.1:
        fail("steal_retries 1: ran %r, kept %r" % (runs, rec))
    if [a["steal"] for a in rec.get("earlier_attempts", [])] != [0.2]:
        fail("the earlier attempt is not kept: %r" % rec)
    print("ok: a cluster the hypervisor disturbed is measured again once, both attempts kept")


def test_probe(emu_dir, tree_probe):
    """clbo-emu probe runs a program across the hosts; the tree probe's times obey causality
    and the links' rate (a 64 KiB message over 100 Mbit/s cannot arrive in under 3.9 ms,
    even with htb's early bytes, at most about 16 KiB: docs/validation.md)."""
    rate, size = 100e6, 65536
    floor_ms = (size - 16384) * 8 / rate * 1e3
    out = {}
    for mode in ("fanout", "reduce"):
        p = subprocess.run([sys.executable, "-B", os.path.join(emu_dir, "clbo-emu"), "probe",
                            "--hosts", "4", "--rate", "100", "--", tree_probe, mode,
                            "--sizes", str(size), "--iters", "3"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
        if p.returncode != 0:
            fail("clbo-emu probe %s: exit %d\n%s" % (mode, p.returncode, p.stderr[-2000:]))
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        if len(rows) != 2 or any(r["mode"] != mode or r["bytes"] != size for r in rows):
            fail("clbo-emu probe %s printed %r" % (mode, p.stdout))
        out[mode] = rows
    for r in out["fanout"]:
        a = r["arrival_ms"]
        # Rank 0 sends to 1 and 2; rank 1 forwards to 3 once its own copy is in.
        if len(a) != 4 or a[1] < floor_ms or a[2] < floor_ms or a[3] < a[1] + floor_ms or \
                r["done_ms"] < max(a):
            fail("fan-out times break causality or the link rate: %r" % r)
    for r in out["reduce"]:
        # Two rounds of 64 KiB into rank 0, one after the other.
        if r["reduce_at_root_ms"] < 2 * floor_ms or r["iallreduce_slowest_rank_ms"] < 2 * floor_ms:
            fail("binomial reduce faster than the links allow: %r" % r)
    # The all-pairs patterns: six rows; each rank sends 3 x 16 KiB per all-to-all, which the
    # link cannot carry in under (49152 - 16384) * 8 / rate (htb's early bytes aside).
    p = subprocess.run([sys.executable, "-B", os.path.join(emu_dir, "clbo-emu"), "probe",
                        "--hosts", "4", "--rate", "100", "--", tree_probe, "allpairs",
                        "--sizes", "16384", "--iters", "3"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    if p.returncode != 0:
        fail("clbo-emu probe allpairs: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
    rows = {r["pattern"]: r for r in
            (json.loads(line) for line in p.stdout.splitlines() if line.startswith("{"))}
    if len(rows) != 6 or any(r["p"] != 4 or r["bytes_per_peer"] != 16384 for r in rows.values()):
        fail("clbo-emu probe allpairs printed %r" % p.stdout)
    a2a_floor_ms = (3 * 16384 - 16384) * 8 / rate * 1e3
    if rows["alltoall"]["ms_per_call_slowest_rank"] < a2a_floor_ms or \
            rows["allgather 4 B"]["ms_per_call_slowest_rank"] >= \
            rows["alltoall"]["ms_per_call_slowest_rank"]:
        fail("all-pairs times break the link rate: %r" % rows)
    if leftovers():
        fail("leftovers: %r" % leftovers())
    print("ok: clbo-emu probe ran the tree probe on 4 hosts: fan-out %s ms, reduce %.2f ms, "
          "all-to-all of 16 KiB per peer %.2f ms" %
          (out["fanout"][-1]["arrival_ms"], out["reduce"][-1]["reduce_at_root_ms"],
           rows["alltoall"]["ms_per_call_slowest_rank"]))
    # A two-level cluster's uplink probe: however TCP shares the uplink among its flows, the
    # rate it reports cannot exceed the uplink's shaped rate (the sum of the flows' steady
    # rates did, 246 Mbit/s through 200, under reno).
    work = scratch(prefix="clbo-emu-test-")
    p = subprocess.run([sys.executable, "-B", os.path.join(emu_dir, "clbo-emu"), "probe",
                        "--hosts", "4", "--rate", "50", "--hosts-per-leaf", "2", "--uplink", "50",
                        "--work", work, "--", "/bin/true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    if p.returncode != 0:
        fail("clbo-emu probe on two levels: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
    probes = json.load(open(os.path.join(work, "measured.json")))["clusters"][0]["probes"]
    up = probes.get("uplink_aggregate") or {}
    if not 0.8 * 50 <= up.get("rate_Mbps", 0) <= 50:
        fail("a 50 Mbit/s uplink reported %r (flows %r)" % (up, probes.get("bulk_across_uplink")))
    if leftovers():
        fail("leftovers after the two-level probe: %r" % leftovers())
    print("ok: a 50 Mbit/s uplink measured at %.1f Mbit/s while its flows were all sending"
          % up["rate_Mbps"])


def test_units(emu_dir):
    """The runner's decisions that need no namespaces: runs wherever Python does."""
    sys.path.insert(0, emu_dir)
    try:
        from clbo_emu import runner
    except ImportError as e:  # the runner imports Mininet's module
        print("SKIP: the emulation's runner cannot be imported here: %s" % e)
        sys.exit(SKIP)
    # Which job the hypervisor disturbed most decides whether a cluster is measured again.
    record = {"jobs": {"a": {"cpu_split": {"steal": 0.02}}, "b": {"cpu_split": None},
                       "c": {"cpu_split": {"steal": 0.18}}, "d": {}}}
    if runner.worst_steal(record) != ("c", 0.18):
        fail("worst_steal: %r" % (runner.worst_steal(record),))
    if runner.worst_steal({"jobs": {"b": {"cpu_split": None}}}) != (None, 0.0):
        fail("worst_steal without splits: %r" % (runner.worst_steal({"jobs": {}}),))
    probed = dict(record, probes={"bulk_all_hosts_at_once_cpu": {"cpu_split": {"steal": 0.23}}})
    if runner.worst_steal(probed) != (runner.PROBES_STEAL, 0.23):
        fail("worst_steal with the probes' steal: %r" % (runner.worst_steal(probed),))
    if runner.probes_steal(record) is not None:
        fail("probes_steal without probes: %r" % (runner.probes_steal(record),))
    print("ok: the job (or the link probes) with the most steal is found; none without CPU "
          "splits")
    # The link probe is taken again while the hypervisor steals over the threshold, at most
    # LINK_PROBE_STEAL_REPEATS more times; the attempt with the least steal is kept (the
    # latest of equals), the others recorded.
    for shares, want_got, want_others in (([0.0], 0, []), ([0.2, 0.04], 1, [0.2]),
                                          ([0.06, 0.18, 0.25, 0.0], 0, [0.18, 0.25]),
                                          ([0.3, 0.1, 0.1], 2, [0.3, 0.1])):
        it = iter(enumerate(shares))
        got, others = runner.until_quiet(lambda: next(it), 0.05,
                                         runner.LINK_PROBE_STEAL_REPEATS)
        if got != want_got or [o[0] for o in others] != want_others:
            fail("until_quiet over %r: kept %r, others %r" % (shares, got, others))
    print("ok: the link probe is taken again while the hypervisor steals, at most twice more, "
          "and the least stolen attempt is kept")
    # An uplink's rate is what its flows delivered while all of them were sending, not their
    # steady rates' sum (a starved flow's window ends long after the others').
    agg = runner.uplink_aggregate([
        {"series": [[10.0, 0], [11.0, 12_500_000], [11.5, 18_750_000]]},
        {"series": [[10.5, 0], [11.0, 2_500_000], [12.5, 3_750_000]]}])
    # Window 10.5..11.5: 12.5 MB from the first flow (6.25 MB at 10.5 by interpolation),
    # 2.5 + 1/3 * 1.25 MB from the second.
    want = (18_750_000 - 6_250_000) + 2_500_000 + 1_250_000 / 3
    if abs(agg["seconds"] - 1.0) > 1e-9 or abs(agg["bytes"] - want) > 1e-6 \
            or abs(agg["rate_Mbps"] - want * 8 / 1e6) > 1e-9:
        fail("uplink_aggregate: %r, want %r bytes over 1 s" % (agg, want))
    print("ok: an uplink's rate is what its flows delivered while all of them were sending")
    # A warm round ends when its slowest host is done: per size and round, the max over hosts.
    got = runner.slowest_rounds([
        {"rounds": [{"bytes_per_pair": 8, "seconds": [1.0, 0.2], "late_s": [0.9, 0.0]},
                    {"bytes_per_pair": 65536, "seconds": [3.0, 5.0], "late_s": [0.0, 0.1]}]},
        {"rounds": [{"bytes_per_pair": 8, "seconds": [0.5, 0.4], "late_s": [0.2, 0.0]},
                    {"bytes_per_pair": 65536, "seconds": [4.0, 2.0], "late_s": [0.0, 0.0]}]}])
    if ([r["seconds"] for r in got["rounds"]] != [[1.0, 0.4], [4.0, 5.0]] or got["hosts"] != 2
            or [r["late_s"] for r in got["rounds"]] != [[0.9, 0.0], [0.0, 0.1]]):
        fail("slowest_rounds: %r" % got)
    print("ok: a warm round's time is its slowest host's")


def main():
    what, emu_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    if what == "units":
        test_units(emu_dir)
        return
    setup(emu_dir)
    if what == "lifecycle":
        test_lifecycle(emu_dir)
    elif what == "mpi":
        test_mpi(emu_dir, os.path.abspath(sys.argv[3]))
    elif what == "probe":
        test_probe(emu_dir, os.path.abspath(sys.argv[3]))
    elif what == "leftovers":
        test_leftovers(emu_dir)
    elif what == "signal":
        test_signal(emu_dir)
    elif what == "bad-plan":
        test_bad_plan(emu_dir)
    else:
        fail("unknown test %r" % what)


if __name__ == "__main__":
    main()
