"""Names of everything an emulated cluster creates, so cleanup can recognise its own.

Every run holds one *slot* (0-9) for its whole life. Its nodes are named clbo<slot>h<i>
(hosts), clbo<slot>s<j> (leaf or single switches) and clbo<slot>sp (the spine); Mininet
names their interfaces <node>-eth<k>. No name is a prefix of another within a slot (at
most four leaf switches), because Mininet's LinuxBridge adopts every interface whose name
contains the bridge's name. Names fit Linux's 15-character interface limit.
"""

import re

PREFIX = "clbo"
SLOTS = range(10)
MAX_HOSTS = 8
MAX_LEAVES = 4


def host_name(slot, i):
    return "%s%dh%d" % (PREFIX, slot, i)


def leaf_name(slot, j):
    return "%s%ds%d" % (PREFIX, slot, j)


def spine_name(slot):
    return "%s%dsp" % (PREFIX, slot)


def node_pattern(slot):
    """Matches exactly the node names of `slot` (hosts, switches, spine)."""
    return re.compile(r"^%s%d(h[1-%d]|s[1-%d]|sp)$" % (PREFIX, slot, MAX_HOSTS, MAX_LEAVES))


def interface_pattern(slot):
    """Matches the interfaces and bridges of `slot` (a bridge is named like its switch)."""
    return re.compile(r"^%s%d(h[1-%d]|s[1-%d]|sp)(-eth[0-9]+)?$" % (PREFIX, slot, MAX_HOSTS,
                                                                  MAX_LEAVES))


def subnet(slot):
    """The hosts' addresses: a /24 of their own per slot, reachable only over our bridges."""
    return "10.77.%d.0/24" % slot


def marker_address(slot, i):
    """An address on host i's loopback that marks its network namespace as this slot's. It
    outlives the host's shell and links, so the processes a killed run left in the
    namespace can still be found (lifetime.py)."""
    return "127.77.%d.%d" % (slot, i)


def marker_prefix(slot):
    return "127.77.%d." % slot
