"""Everything that starts a process or reads a resource, on this machine or another.

seam.py           the Host protocol and the values that cross it (ProcessRef, Completed,
                  ProcessFigures, HttpAnswer, HostUnreachable, TransferError)
host.py           LocalHost (this machine) and LOCAL
remote.py, ssh.py RemoteHost (another machine over SSH) and its connection to the agent
fake.py           FakeHost: no processes at all, for unit tests of the orchestration
agent/            the operations that run on the host they concern (stdlib only, sent to
                  another machine as its own files; the one reader of /proc)
hosts.py          the hosts file: which Host runs which role
process_group.py  a command in its own process group: start, list, stop, reap, recorded
server.py, proxy.py, lifecycle.py   a server (and a proxy in front) from start to stop
databases/        where the databases come from: one module per provider and per engine
db.py, settle.py  talking to a database; letting it settle between samples
resources.py      CPU and memory of each role's processes during the measured window
cgroups.py        each role in a cgroup v2 of its own for the window (exact CPU), and
                  the machine's CPU over it (the steps are agent/cgroup.py)
environment.py, topology.py   what the results record of the machines and the network
state.py, signals.py          what a killed harness leaves for the next one; signals

A new kind of host is one module implementing seam.Host (test_fake_host.py checks every
host has every member) and one line where Hosts.for_role makes it.
"""
