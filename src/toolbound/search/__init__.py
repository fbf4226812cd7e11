"""Search on ripgrep, shared by Grep and Glob.

Finding files (rg's walk and ignore rules), deciding which to keep (a bounded
heap by modification time), matching (rg again, on the kept files only) and
bounding what the model sees are separate stages.

Pieces:
    rg        find toolbound's own rg, run it, stream its output, stop it
    scope     the ``path`` argument -> where rg runs
    files     the shared walk: the newest N files rg lists
    ranking   bounded heaps and the budget fit (pure)
    notices   the model-facing notices
"""
