"""EmuCluster: one emulated cluster configuration, up for the duration of a `with` block.

    with EmuCluster(config, slot, congestion_control="reno") as cluster:
        cluster.hosts        # [(name, ip, shell pid)] in rank-placement order
        cluster.tcp          # the TCP settings every host runs with (read back)
        cluster.run(argv, host=0, timeout=60)   # a command inside host 0's namespace

Leaving the block (normally, by an exception, or by the SIGTERM/SIGINT/SIGHUP handlers of
runner.py, which raise) kills every process started in the hosts' namespaces, stops
Mininet and checks that no interface of the slot is left.
"""

import os
import signal
import subprocess
import time

from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.nodelib import LinuxBridge

from . import lifetime, names
from .topology import ClusterTopo, ShapedLink


TCP_SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_slow_start_after_idle")


class EmuCluster:
    def __init__(self, config, slot, congestion_control=None):
        """congestion_control: the TCP congestion control every emulated host runs (set in its
        own namespace, the machine's stays as it is); None keeps the one a new namespace
        inherits."""
        self.config = config
        self.slot = slot
        self.congestion_control = congestion_control
        self.net = None
        self.hosts = []
        self.tcp = {}
        self._children = []

    def __enter__(self):
        setLogLevel("error")  # Mininet's own chatter (bridge-nf warnings) stays out
        try:
            self.net = Mininet(topo=ClusterTopo(slot=self.slot, config=self.config),
                               switch=LinuxBridge, link=ShapedLink, controller=None,
                               ipBase=names.subnet(self.slot), build=True)
            self.net.start()
            for i, h in enumerate(self.net.hosts):
                h.cmd("ip addr add %s/32 dev lo" % names.marker_address(self.slot, i + 1))
            self.hosts = [(h.name, h.IP(), h.pid) for h in self.net.hosts]
            self._check_shaping()
            self.tcp = self._set_tcp()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _check_shaping(self):
        """Every host interface must carry our htb class: a kernel without sch_htb (or a tc
        error Mininet only logs) would silently leave the links unshaped."""
        for name, _, pid in self.hosts:
            out = subprocess.run(["mnexec", "-a", str(pid), "tc", "class", "show", "dev",
                                  name + "-eth0"], capture_output=True, text=True).stdout
            if "htb" not in out or "rate" not in out:
                raise lifetime.EmuError("link shaping failed on %s-eth0 (tc shows: %r); is "
                                        "sch_htb available?" % (name, out.strip()))

    def _sysctl(self, pid, *args):
        r = subprocess.run(["mnexec", "-a", str(pid), "sysctl", "-n"] + list(args),
                           capture_output=True, text=True)
        return r.returncode, (r.stdout.strip() or r.stderr.strip())

    def _set_tcp(self):
        """Sets the congestion control in every host's namespace and reads the TCP settings
        back; the same on every host, or an EmuError naming the host and the value."""
        cc = self.congestion_control  # its form is checked with the plan (runner.validate_plan)
        settings = None
        for name, _, pid in self.hosts:
            if cc is not None:
                rc, out = self._sysctl(pid, "-w", "net.ipv4.tcp_congestion_control=%s" % cc)
                if rc != 0:
                    _, allowed = self._sysctl(pid, "net.ipv4.tcp_allowed_congestion_control")
                    raise lifetime.EmuError(
                        "tcp_congestion_control: %s cannot be set in %s's namespace (%s); a "
                        "namespace may use only net.ipv4.tcp_allowed_congestion_control = %s"
                        % (cc, name, out, allowed))
            got = {}
            for key in TCP_SYSCTLS:
                rc, out = self._sysctl(pid, key)
                got[key.rsplit(".", 1)[1]] = out if rc == 0 else None
            if cc is not None and got["tcp_congestion_control"] != cc:
                raise lifetime.EmuError("tcp_congestion_control: %s set in %s's namespace reads "
                                        "back as %s" % (cc, name, got["tcp_congestion_control"]))
            if settings is not None and got != settings:
                raise lifetime.EmuError("the emulated hosts' TCP settings differ: %s has %s, "
                                        "the first host %s" % (name, got, settings))
            settings = got
        return {"congestion_control": settings["tcp_congestion_control"],
                "slow_start_after_idle": settings["tcp_slow_start_after_idle"],
                "set_by": "the plan" if cc is not None else "inherited from the machine"}

    def start(self, argv, host=0, log=None, env=None):
        """Starts argv inside host `host`'s namespace, in a session of its own (so it can be
        killed with its children); returns the Popen."""
        pid = self.hosts[host][2]
        out = open(log, "ab") if log else subprocess.DEVNULL
        try:
            p = subprocess.Popen(["mnexec", "-a", str(pid)] + list(argv), stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                 env=env)
        finally:
            if log:
                out.close()
        self._children.append(p)
        return p

    def run(self, argv, host=0, timeout=None, log=None, env=None):
        """Runs argv in host `host` to the end; returns its exit code (124 on timeout, after
        killing it and everything it started)."""
        p = self.start(argv, host=host, log=log, env=env)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill(p)
            return 124

    def _kill(self, p):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()

    def close(self):
        for p in self._children:
            self._kill(p)
        self._children = []
        if self.net is not None:
            shells = [h.pid for h in self.net.hosts if h.shell]
            # Processes that left their session (an orted, a daemonised helper) die too.
            lifetime.kill_namespace_processes(shells, keep=set(shells))
            self.net.stop()
            self.net = None
            deadline = time.time() + 10
            while lifetime.slot_shells(self.slot) and time.time() < deadline:
                time.sleep(0.05)
        lifetime.remove_slot(self.slot)
