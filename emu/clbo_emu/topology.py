"""The emulated cluster's topology and link shaping (Mininet, LinuxBridge, TCLink/htb).

single_switch  every host on one bridge; each host link shaped to link_Mbps.
two_level      hosts_per_leaf hosts per leaf bridge, leaves joined to a spine bridge by
               uplinks shaped to uplink_Mbps (link_Mbps × hosts_per_leaf / oversubscription).

Shaping (docs/validation.md, "Shaping"). Each link is a veth pair; htb on both ends
shapes each direction separately to the rate (full duplex, like a switch port). This kernel
has no sch_netem, so there is no delay or loss emulation: latency is what the veth pair,
bridge and TCP stacks really take, measured per run. The htb class has
  burst = cburst = two full frames (3028 bytes): an idle link lets at most two frames pass
           at veth speed, then the rate holds from the first byte on, as on a switch port.
           A larger bucket lets every message smaller than it cross an idle link faster
           than the line rate; measured at 200 Mbit/s, 64 KiB took 2784 us one way with this
           bucket (2741 us at the line rate), 2343 us with Mininet's 15 KB and 1371 us with
           66 KB; bulk flows reach the same rate with all three;
  quantum = two frames (one class per link: the quantum only silences htb's "quantum is
           big" warning that r2q = 10 gives at these rates).
Every shaped interface also has gso_max_segs GSO_SEGS (4), so TCP hands htb packets of at
most four frames. htb sends a packet whenever its class has any tokens left and charges it
afterwards, so with the veth's default GSO one super-packet of up to 64 KB crossed an idle
link at veth speed: measured at 200 Mbit/s on a warm connection, 16 KiB took 119 us one way
and 32 KiB 170 us (685 and 1371 us at the line rate). One frame per packet (628 and 1299 us)
made TCP CPU-bound on 2 cores instead: eight hosts sending at once got 149 of 200 Mbit/s per
flow, one flow at 1000 Mbit/s 595. Four frames per packet bound the early bytes to one packet
per message (MPI one-way at 200 Mbit/s: 16 KiB 490 us, 32 KiB 1224, 64 KiB 2684, 128 KiB
5413 against 635, 1344, 2731, 5483 with one frame) and give 188 Mbit/s per flow and 948
Mbit/s; docs/validation.md, "Shaping", has the whole comparison.
The leaf qdisc is htb's default FIFO (txqueuelen 1000 packets), deep enough that the
handful of TCP flows per link never lose a packet: shaping is lossless.
"""

from mininet.link import Link, TCIntf
from mininet.topo import Topo

from . import names

FRAME = 1514  # an Ethernet frame of the 1500-byte MTU, as htb counts it
GSO_SEGS = 4  # the most frames TCP puts in one packet on a shaped interface (see above)


def shaping_record(rate_Mbps):
    """The shaping of a link of rate_Mbps, as the results record it (their provenance)."""
    burst, _, quantum = htb_parameters(rate_Mbps)
    return {"htb_burst_bytes": burst, "htb_quantum_bytes": quantum,
            "max_packet_frames": GSO_SEGS, "frame_bytes": FRAME}


def htb_parameters(rate_Mbps):
    """(burst, cburst, quantum) in bytes for a class of rate_Mbps (see the module doc)."""
    del rate_Mbps  # two frames at every rate the grid allows (1-1000 Mbit/s)
    return 2 * FRAME, 2 * FRAME, 2 * FRAME


class ShapedIntf(TCIntf):
    """TCIntf whose htb class uses the burst and quantum above instead of Mininet's 15 KB,
    and whose packets are at most GSO_SEGS frames (see the module doc)."""

    def config(self, bw=None, **params):  # noqa: D102 (Mininet's name)
        result = TCIntf.config(self, bw=bw, **params)
        if bw is not None:
            err = self.cmd("ip link set dev %s gso_max_segs %d 2>&1"
                           % (self.name, GSO_SEGS)).strip()
            if err:
                raise RuntimeError("cannot limit GSO on %s (needed for faithful htb shaping): %s"
                                   % (self.name, err))
        return result

    def bwCmds(self, bw=None, **_):  # noqa: N802 (Mininet's name)
        if bw is None:
            return [], " root "
        burst, cburst, quantum = htb_parameters(bw)
        return ["%s qdisc add dev %s root handle 5:0 htb default 1",
                "%s class add dev %s parent 5:0 classid 5:1 htb " +
                "rate %fMbit burst %d cburst %d quantum %d" % (bw, burst, cburst, quantum)
                ], " parent 5:1 "


class ShapedLink(Link):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("cls1", ShapedIntf)
        kwargs.setdefault("cls2", ShapedIntf)
        Link.__init__(self, *args, **kwargs)


class ClusterTopo(Topo):
    """Builds the hosts, switches and links of one cluster configuration (a dict with
    topology, hosts, link_Mbps and, for two_level, hosts_per_leaf and uplink_Mbps)."""

    def build(self, slot=0, config=None):  # noqa: D102 (Mininet calls build from __init__)
        c = config
        hosts = [self.addHost(names.host_name(slot, i + 1)) for i in range(c["hosts"])]
        if c["topology"] == "single_switch":
            s = self.addSwitch(names.leaf_name(slot, 1), dpid="%x" % 1)
            for h in hosts:
                self.addLink(h, s, bw=c["link_Mbps"])
            return
        per_leaf = c["hosts_per_leaf"]
        spine = self.addSwitch(names.spine_name(slot), dpid="%x" % 99)
        for j in range((len(hosts) + per_leaf - 1) // per_leaf):
            leaf = self.addSwitch(names.leaf_name(slot, j + 1), dpid="%x" % (j + 1))
            for h in hosts[j * per_leaf:(j + 1) * per_leaf]:
                self.addLink(h, leaf, bw=c["link_Mbps"])
            self.addLink(leaf, spine, bw=c["uplink_Mbps"])
