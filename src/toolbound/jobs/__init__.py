"""Background jobs (CONTRACT section 9): a command that outlives its Bash call.

``Bash {"background": true}`` starts one; ``JobOutput`` pages its output and
waits on it; ``JobInput`` writes to its stdin; ``JobStop`` stops its tree.
Nothing is imported here. The model text of the job results is
``toolbound.model_text``'s, like every tool's.

Pieces:
    table    JobTable: a host's jobs (start, output, stop, aclose)
    job      Job: one job's tree, logs, state and waiting (run by exec.run)
    stdin    JobStdin: a job's stdin pipe or pseudo-terminal, written by JobInput
    log      StreamLog: one stream's bounded log on disk and its exact counts
    page     one stream's page within the shell budget
    models   the wire shapes
"""
