"""The process tree of one Bash call: spawn, capture, kill.

Pieces:
    capture  bounded per-stream capture (stdout head, stderr tail ring) and counts
    reader   the reader thread of one pipe: capture, decode, coalesce, emit
    tree     spawn ``bash -c`` as a new tree, find its members, stop and reap them
"""
