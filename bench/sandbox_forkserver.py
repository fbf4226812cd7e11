"""A sandbox kept per session that forks each command: two prototypes, measured by
bench/sandbox.py (issue 30) to choose how a confined call could pay less.

Not toolbound's code: what each command would cost if one long-lived
``workspace-write`` bwrap per session (its user, mount and network namespaces,
its mounts and masks; the server inside holds ``CAP_SYS_ADMIN`` there, never
a command) forked every command with everything a sandbox built for the call
gives it today:

- its own PID namespace (PID 1 a keeper that never reaps, so the shell's exact
  status stays readable; killing it ends the whole tree),
- its own mount namespace with an empty private ``/tmp`` and ``/dev/shm``
  and a ``/proc`` of its PID namespace (``/proc/sys`` and co. read-only, as
  bwrap's ``--proc``),
- no capability (bounding, permitted, effective, ambient: all empty), a new
  session, its folder, its environment, its pipes (passed with the order),
- pidfds on its keeper and its shell sent back to the host.

The host sends an order (folder, command, environment; stdin, stdout, stderr
as descriptors) over a SOCK_SEQPACKET socket, gets the two pidfds, waits for
the shell's exit, then kills the keeper and waits for it: the namespace is
gone. The server is PID 1 of the session's namespace and reaps the keepers.

Two servers, the same protocol: ``PYTHON_SERVER`` (``python -I -S``, forks
with ``os.fork``) and ``C_SERVER`` (compiled here with ``cc`` when there is
one: a compiled helper would have to ship in a platform wheel).

Pieces:
    PYTHON_SERVER, C_SERVER  the two servers' sources
    Server       one session's server, started in its bwrap: run(command)
    compile_c    the C server built in a folder (None: no compiler)
    measure      median elapsed and CPU ms per ``true``: plain spawn (anchor) and each server
"""

from __future__ import annotations

import os
import resource
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolbound.exec.sandbox import SandboxPolicy, bwrap_args

PYTHON_SERVER = r"""
import ctypes, os, resource, signal, socket, sys

libc = ctypes.CDLL(None, use_errno=True)
NEWNS, NEWPID = 0x20000, 0x20000000
RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND = 1, 2, 4, 8, 32, 4096
REC, PRIVATE = 16384, 1 << 18

def ok(result, what):
    if result != 0:
        raise OSError(ctypes.get_errno(), what)

def mount(src, dst, fs, flags, data=None):
    ok(libc.mount(src, dst, fs, flags, data), dst)

class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

class Caps(ctypes.Structure):
    _fields_ = [("eff", ctypes.c_uint32), ("prm", ctypes.c_uint32), ("inh", ctypes.c_uint32)]

sock = socket.socket(fileno=int(sys.argv[1]))
tmp = sys.argv[2].encode()
last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
own = os.open("/proc/self/ns/pid", os.O_RDONLY)
for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(sig, signal.SIG_DFL)

def drop_caps():
    for cap in range(last_cap + 1):
        ok(libc.prctl(24, cap, 0, 0, 0), "bounding set")
    ok(libc.prctl(47, 4, 0, 0, 0), "ambient")
    ok(libc.capset(ctypes.byref(Header(0x20080522, 0)), (Caps * 2)()), "capset")

def shell(order, fds):
    folder, command, *env = order.split(b"\0")
    os.setsid()
    for n, fd in enumerate(fds):
        os.dup2(fd, n)
    os.closerange(3, 1 << 16)
    drop_caps()
    os.chdir(folder)
    os.execvpe("bash", [b"bash", b"-c", command], dict(e.split(b"=", 1) for e in env if e))

def keeper(order, fds):
    ok(libc.unshare(NEWNS), "unshare")
    mount(None, b"/", None, REC | PRIVATE)
    mount(b"tmpfs", b"/tmp", b"tmpfs", NOSUID | NODEV, b"mode=0755,size=" + tmp)
    mount(b"tmpfs", b"/dev/shm", b"tmpfs", NOSUID | NODEV, b"mode=0755")
    mount(b"proc", b"/proc", b"proc", NOSUID | NODEV | NOEXEC)
    for sub in (b"/proc/sys", b"/proc/sysrq-trigger", b"/proc/irq", b"/proc/bus"):
        if os.path.exists(sub):
            mount(sub, sub, None, BIND | REC)
            mount(None, sub, None, BIND | REMOUNT | RDONLY | NOSUID | NODEV | NOEXEC)
    pid = os.fork()
    if pid == 0:
        shell(order, fds)
    socket.send_fds(sock, [b"ok"], [os.pidfd_open(1), os.pidfd_open(pid)])
    os.closerange(0, 1 << 16)
    drop_caps()
    while True:
        signal.pause()

os.write(2, b"1\n")
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    order, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
    if not order:
        break
    ok(libc.unshare(NEWPID), "unshare")
    if os.fork() == 0:
        try:
            keeper(order, fds)
        except BaseException as err:
            socket.send_fds(sock, [b"error " + str(err).encode()], [])
        os._exit(125)
    ok(libc.setns(own, NEWPID), "setns")
    for fd in fds:
        os.close(fd)
"""

C_SERVER = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int sock;
static char tmp_opts[64];

static void need(int ok, const char *what) {
    if (!ok) { perror(what); _exit(125); }
}

static void drop_caps(void) {
    int last = 40;
    FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
    if (f) { need(fscanf(f, "%d", &last) == 1, "cap_last_cap"); fclose(f); }
    for (int cap = 0; cap <= last; cap++) need(prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0, "bset");
    need(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0, "ambient");
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    need(syscall(SYS_capset, &h, d) == 0, "capset");
}

static void send_pidfds(int a, int b) {
    char byte = 'k';
    struct iovec iov = {&byte, 1};
    union { char buf[CMSG_SPACE(2 * sizeof(int))]; struct cmsghdr align; } u;
    struct msghdr m = {0};
    m.msg_iov = &iov; m.msg_iovlen = 1; m.msg_control = u.buf; m.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int fds[2] = {a, b};
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    need(sendmsg(sock, &m, 0) == 1, "sendmsg");
}

static void mnt(const char *src, const char *dst, const char *fs, unsigned long fl, const char *d) {
    need(mount(src, dst, fs, fl, d) == 0, dst);
}

static void run_shell(char *order, ssize_t len, int *fds) {
    char *folder = order, *command = folder + strlen(folder) + 1;
    char *envp[4096];
    int n = 0;
    for (char *e = command + strlen(command) + 1; e < order + len && n < 4095; e += strlen(e) + 1)
        if (*e) envp[n++] = e;
    envp[n] = NULL;
    setsid();
    for (int i = 0; i < 3; i++) dup2(fds[i], i);
    syscall(SYS_close_range, 3, ~0U, 0);
    drop_caps();
    need(chdir(folder) == 0, "chdir");
    char *argv[] = {"bash", "-c", command, NULL};
    execvpe("bash", argv, envp);
    _exit(127);
}

static void keeper(char *order, ssize_t len, int *fds) {
    static const char *ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};
    need(unshare(CLONE_NEWNS) == 0, "unshare");
    mnt(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
    mnt("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts);
    mnt("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
    mnt("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    for (int i = 0; i < 4; i++) {
        if (access(ro[i], F_OK) != 0) continue;
        mnt(ro[i], ro[i], NULL, MS_BIND | MS_REC, NULL);
        unsigned long fl = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
        mnt(NULL, ro[i], NULL, fl, NULL);
    }
    pid_t pid = fork();
    need(pid >= 0, "fork");
    if (pid == 0) run_shell(order, len, fds);
    send_pidfds(syscall(SYS_pidfd_open, 1, 0), syscall(SYS_pidfd_open, pid, 0));
    syscall(SYS_close_range, 0, ~0U, 0);
    drop_caps();
    for (;;) pause();
}

int main(int argc, char **argv) {
    static char order[1 << 20];
    need(argc == 3, "usage: server SOCKET TMP_SIZE");
    sock = atoi(argv[1]);
    snprintf(tmp_opts, sizeof tmp_opts, "mode=0755,size=%s", argv[2]);
    int own = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    need(own >= 0, "own namespace");
    need(write(2, "1\n", 2) == 2, "started");
    for (;;) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
        union { char buf[CMSG_SPACE(3 * sizeof(int))]; struct cmsghdr align; } u;
        struct iovec iov = {order, sizeof order - 1};
        struct msghdr m = {0};
        m.msg_iov = &iov; m.msg_iovlen = 1; m.msg_control = u.buf; m.msg_controllen = sizeof u.buf;
        ssize_t len = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (len <= 0) return 0;
        order[len] = 0;
        int fds[3];
        memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fds);
        need(unshare(CLONE_NEWPID) == 0, "unshare");
        pid_t keeper_pid = fork();
        if (keeper_pid == 0) keeper(order, len, fds);
        need(setns(own, CLONE_NEWPID) == 0, "setns");
        for (int i = 0; i < 3; i++) close(fds[i]);
    }
}
"""


def compile_c(folder: Path) -> Path | None:
    """The C server built in ``folder`` (one the sandbox shows); None when no C
    compiler is found."""
    source, binary = folder / "forkserver.c", folder / "forkserver"
    source.write_text(C_SERVER)
    try:
        subprocess.run(["cc", "-O2", "-o", str(binary), str(source)], check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return binary


class Server:
    """One session's fork server in its ``workspace-write`` bwrap (see the module docstring)."""

    def __init__(self, program: list[str], workspace: Path) -> None:
        policy = SandboxPolicy.create("workspace-write")
        assert policy.bwrap is not None, "bench/sandbox.py needs bubblewrap"
        options = bwrap_args(policy, cwd=workspace, scratch=None)
        drop = options.index("--cap-drop")
        # The server alone holds CAP_SYS_ADMIN (and CAP_SETPCAP, to drop them) there.
        options[drop : drop + 2] = [
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--cap-add",
            "CAP_SETPCAP",
        ]
        self.host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [policy.bwrap, *options, "--", *program, str(theirs.fileno()), str(policy.tmp_bytes)]
        self.proc = subprocess.Popen(
            argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        theirs.close()
        assert self.proc.stderr is not None
        said = self.proc.stderr.readline()
        assert said == b"1\n", said
        self.server_pid = int(
            Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        )
        env = b"\0".join(k + b"=" + v for k, v in os.environb.items())
        self.workspace = bytes(workspace)
        self.env = env

    def run(self, command: bytes) -> tuple[bytes, int]:
        """Run ``command`` in a fresh namespace of this server: its stdout, its wait status."""
        out_r, out_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        order = b"\0".join([self.workspace, command, self.env])
        socket.send_fds(self.host, [order], [null, out_w, out_w])
        os.close(null)
        os.close(out_w)
        said, fds, _, _ = socket.recv_fds(self.host, 4096, 2)
        assert len(fds) == 2, said
        keeper, shell = fds
        try:
            select.select([shell], [], [])
            output = b""
            while chunk := os.read(out_r, 65536):
                output += chunk
            status = _zombie_status(shell)
            signal.pidfd_send_signal(keeper, signal.SIGKILL)
            select.select([keeper], [], [])
        finally:
            for fd in (keeper, shell, out_r):
                os.close(fd)
        return output, status

    def cpu_s(self) -> float:
        """CPU seconds of the server and every process it reaped (keepers, their shells)."""
        fields = Path(f"/proc/{self.server_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.host.close()
        self.proc.wait(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


def _zombie_status(pidfd: int) -> int:
    """The exit status of the exited, unreaped process ``pidfd`` names (its host PID
    from the pidfd's fdinfo, the status from its ``/proc`` stat)."""
    for line in Path(f"/proc/self/fdinfo/{pidfd}").read_text().splitlines():
        if line.startswith("Pid:"):
            pid = int(line.split()[1])
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(stat[49])


def _self_cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


# What a command sees in a fresh namespace of a server: its PID namespace, /tmp
# (empty, though the last command left a file), its capabilities, its session.
PROBE = (
    b"readlink /proc/self/ns/pid; ls -A /tmp /dev/shm; touch /tmp/left /dev/shm/left; "
    b"grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status; ps -o pid=,sid=,comm= ; "
    b"umount /tmp 2>/dev/null && echo unmounted; true"
)


def check(server: Server) -> None:
    """Each command gets a new PID namespace, an empty /tmp and /dev/shm, no capability."""
    first, status = server.run(PROBE)
    second, _ = server.run(PROBE)
    assert status == 0, first
    assert first.splitlines()[0] != second.splitlines()[0], (first, second)
    for said in (first, second):
        lines = said.decode().split()
        assert "left" not in lines, said
        assert "unmounted" not in lines, said
        assert lines.count("0000000000000000") == 4, said
    assert server.run(b"kill -KILL $$")[1] == signal.SIGKILL
    assert server.run(b"exit 137")[1] >> 8 == 137


def measure(runs: int, batch: int) -> dict[str, tuple[float, float]]:
    """Median (elapsed ms, CPU ms) per ``true``: a plain ``bash -c true`` spawned by
    this process (the anchor), and one in a fresh namespace of each server.

    The workspace (where the C server is built) is under /var/tmp: a fresh /tmp
    mounted for each command would cover a workspace under /tmp, which a real
    server would have to bind again into each command's /tmp.
    """
    with tempfile.TemporaryDirectory(prefix="toolbound-forkserver-", dir="/var/tmp") as tmp:
        return _measure(Path(tmp), runs, batch)


def _measure(workspace: Path, runs: int, batch: int) -> dict[str, tuple[float, float]]:
    c_server = compile_c(workspace)
    programs = {"python fork server": [sys.executable, "-I", "-S", "-B", "-c", PYTHON_SERVER]}
    if c_server is not None:
        programs["C fork server"] = [str(c_server)]
    servers = {label: Server(argv, workspace) for label, argv in programs.items()}
    try:
        for server in servers.values():
            check(server)
        samples: dict[str, list[tuple[float, float]]] = {"plain": []}
        samples.update({label: [] for label in servers})
        for _ in range(runs // batch):
            started, cpu = time.perf_counter(), _self_cpu_s()
            for _ in range(batch):
                subprocess.run(["bash", "-c", "true"], stdin=subprocess.DEVNULL, check=True)
            samples["plain"].append(
                (
                    (time.perf_counter() - started) * 1000 / batch,
                    (_self_cpu_s() - cpu) * 1000 / batch,
                )
            )
            for label, server in servers.items():
                started, cpu, theirs = time.perf_counter(), _self_cpu_s(), server.cpu_s()
                for _ in range(batch):
                    server.run(b"true")
                spent = _self_cpu_s() - cpu + server.cpu_s() - theirs
                samples[label].append(
                    ((time.perf_counter() - started) * 1000 / batch, spent * 1000 / batch)
                )
    finally:
        for server in servers.values():
            server.close()
    return {
        label: (statistics.median(s[0] for s in runs_), statistics.median(s[1] for s in runs_))
        for label, runs_ in samples.items()
    }
