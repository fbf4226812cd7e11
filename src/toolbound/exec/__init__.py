"""The process tree of one command (a Bash call's or a job's): spawn, confine, read, stop.

Pieces:
    run       the one run of a command: spawn, watch, stop or reap, drain; KillPolicy
    events    one call's numbered events to its listeners (a job's too)
    buffering a job's line-buffered standard streams (Python, glibc stdio via stdbuf)
    tree      spawn ``bash -c`` (or any argv) as a new tree; ``Tree``, what the Bash tool drives
    guard     the host as child subreaper, the call marker, the guard that kills
              the trees when the host dies
    members   who belongs to a tree, read from /proc
    stopping  SIGTERM, grace, SIGKILL, reap, as a KillPolicy says
    sandbox   the same tree inside bubblewrap (CONTRACT section 11): the one way a command starts
    capture   bounded per-stream capture (stdout head, stderr tail ring) and counts
    abort     a call's abort signal, an asyncio.Event that can wake a waiter directly
    reader    the reader of one pipe (on the loop, then on a worker): feed its sink (a
              capture or a job's log), decode, coalesce, emit
"""
