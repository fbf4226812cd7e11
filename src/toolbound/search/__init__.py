"""Search on ripgrep, shared by Grep and Glob.

Finding files (rg's walk and ignore rules), deciding which to keep (a bounded
heap by modification time), matching (rg again, on the kept files only) and
bounding what the model sees are separate stages.

Pieces:
    rg           find toolbound's own rg, run it, stream its output, stop it
    scope        the ``path`` argument -> where rg runs
    select       Glob's pattern and Grep's ``glob``/``type``: which listed files count
    globs        rg's glob meaning compiled to a regex on the raw path bytes
    names        how a found name is shown: whole, always valid UTF-8
    files        the shared walk: the newest N files rg lists
    passes       Grep's two passes: the files with a match, then their lines or counts
    matchlines   rg's content and count output read back (pass 2)
    ranking      bounded heaps and the budget fit (pure)
    page_notice  a Grep page's notice, from how its rg runs ended (sentences: toolbound.notices)
"""
