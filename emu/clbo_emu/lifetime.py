"""Lifetime of an emulated cluster: permission checks, the slot a run holds, and removal
of everything a slot's run created (on exit, and for leftovers of a killed run).

A run holds /run/clbo-emu/slot<N>.lock with flock(2) for as long as it lives; the kernel
drops the lock when the process dies, however it dies. A slot whose lock can be taken has
no live owner, so whatever carries its names is a leftover and is removed:
  * every process in a network namespace marked as the slot's: each emulated host's
    loopback carries names.marker_address(slot, i). The mark stays when the run dies: its
    host shells then exit (their pty closes) and its links may be gone, but processes it
    started (mpirun, daemons, ranks) can live on inside. The root namespace is never
    touched this way;
  * the slot's switch shells (Mininet starts each node as `bash ... mininet:<name>`; in the
    root namespace: only the shell itself is signalled);
  * the interfaces and bridges named by names.interface_pattern(slot).
Nothing that does not carry a clbo<slot> name or mark is ever signalled or deleted.
"""

import fcntl
import os
import re
import shutil
import signal
import subprocess
import time

from . import names

STATE_DIR = "/run/clbo-emu"
CAP_NET_ADMIN = 12

# Debian packages that provide the tools, for the error message.
TOOLS = {"mnexec": "mininet", "brctl": "bridge-utils", "tc": "iproute2", "ip": "iproute2",
         "mpirun": "openmpi-bin"}


class EmuError(Exception):
    """A clear, user-facing reason why the emulation went wrong."""


class EnvironmentUnfit(EmuError):
    """This machine or process cannot emulate at all (not root, no CAP_NET_ADMIN, tools)."""


def check_environment():
    """Root with CAP_NET_ADMIN, and the tools Mininet needs; raises EmuError otherwise."""
    if os.geteuid() != 0:
        raise EnvironmentUnfit("the emulated cluster needs root (it creates network namespaces, "
                       "veth pairs and Linux bridges); run as root or with sudo")
    if not has_cap_net_admin():
        raise EnvironmentUnfit("this process lacks CAP_NET_ADMIN (a container without "
                       "--cap-add=NET_ADMIN?); network namespaces cannot be created here")
    missing = ["%s (Debian package %s)" % (t, p) for t, p in TOOLS.items() if not shutil.which(t)]
    if missing:
        raise EnvironmentUnfit("missing tools: " + ", ".join(missing) +
                       "; bash scripts/install-deps.sh installs them")


def has_cap_net_admin():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_NET_ADMIN & 1)
    return False


class Slot:
    """A held slot: acquire() picks the first free one, cleaning leftovers of every free
    slot on the way; release() unlocks (call after cleanup)."""

    def __init__(self):
        self.index = None
        self._fd = None

    def acquire(self):
        os.makedirs(STATE_DIR, exist_ok=True)
        for s in names.SLOTS:
            fd = os.open(os.path.join(STATE_DIR, "slot%d.lock" % s), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue  # a live run owns it
            remove_slot(s)  # leftovers of a run that died
            if self.index is None:
                self.index, self._fd = s, fd
                os.ftruncate(fd, 0)
                os.write(fd, ("%d\n" % os.getpid()).encode())
            else:
                os.close(fd)
        if self.index is None:
            raise EmuError("all %d emulation slots are held by running clbo emulations "
                           "(see %s)" % (len(names.SLOTS), STATE_DIR))
        return self.index

    def release(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _netns(pid):
    try:
        return os.stat("/proc/%d/ns/net" % pid).st_ino
    except OSError:
        return None


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().rstrip(b"\0").split(b"\0")
    except OSError:
        return []


def _pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def slot_shells(slot):
    """{pid: node name} of the Mininet shells of `slot`'s nodes."""
    pattern = names.node_pattern(slot)
    shells = {}
    for pid in _pids():
        args = _cmdline(pid)
        if len(args) >= 2 and args[0].endswith(b"bash") and args[-2] == b"-is":
            tag = args[-1].decode(errors="replace")
            if tag.startswith("mininet:") and pattern.match(tag[len("mininet:"):]):
                shells[pid] = tag[len("mininet:"):]
    return shells


def marked_namespaces(slot):
    """{netns inode: [pids]} of the namespaces that carry `slot`'s mark (never the root's)."""
    root = _netns(1)
    by_ns = {}
    for pid in _pids():
        ns = _netns(pid)
        if ns is not None and ns != root and pid != os.getpid():
            by_ns.setdefault(ns, []).append(pid)
    marked = {}
    needle = names.marker_prefix(slot).encode()
    for ns, pids in by_ns.items():
        for pid in pids:  # any member shows the namespace's addresses
            try:
                with open("/proc/%d/net/fib_trie" % pid, "rb") as f:
                    if needle in f.read():
                        marked[ns] = pids
                break
            except OSError:
                continue
    return marked


def processes_in_namespaces(inodes):
    """Pids whose network namespace is one of `inodes` (never the root namespace's)."""
    root = _netns(1)
    wanted = set(i for i in inodes if i is not None and i != root)
    return [pid for pid in _pids() if pid != os.getpid() and _netns(pid) in wanted]


def kill_namespace_processes(host_pids, keep=()):
    """SIGKILLs every process inside the namespaces of the given host shells, except `keep`,
    and waits until they are gone."""
    inodes = [_netns(p) for p in host_pids]
    for _ in range(50):
        victims = [p for p in processes_in_namespaces(inodes) if p not in keep]
        if not victims:
            return
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    raise EmuError("processes %s in the emulated hosts' namespaces did not exit" % victims)


def slot_interfaces(slot):
    pattern = names.interface_pattern(slot)
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"^\d+:\s+([^:@\s]+)", line)
        if m and pattern.match(m.group(1)):
            found.append(m.group(1))
    return found


def remove_slot(slot):
    """Removes every process, interface and bridge carrying `slot`'s names or mark."""
    for _ in range(50):
        marked = marked_namespaces(slot)
        if not marked:
            break
        for pids in marked.values():
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.1)
    else:
        raise EmuError("processes in namespaces of slot %d did not exit" % slot)
    shells = slot_shells(slot)
    for pid in shells:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for name in slot_interfaces(slot):
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    left = slot_interfaces(slot)
    if left:
        raise EmuError("could not remove interfaces %s" % ", ".join(left))
