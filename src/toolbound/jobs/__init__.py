"""Background jobs (CONTRACT section 9): a command that outlives its Bash call.

``Bash {"background": true}`` starts one; ``JobOutput`` pages its output and
waits on it; ``JobStop`` stops its tree. Nothing is imported here, so the
model text (``jobs.text``) loads without the rest.

Pieces:
    table    JobTable: a host's jobs (start, output, stop, aclose)
    job      Job: one job's tree, pumps, state and waiting
    log      StreamLog: one stream's bounded log on disk and its exact counts
    page     one stream's page within the shell budget
    emitter  a job's events to the host's call listeners
    models   the wire shapes
    text     the model text of the job results
"""
