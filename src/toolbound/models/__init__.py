"""Each tool's argument and result models, one module per tool.

A call imports its own tool's module only (the registry names it), so it
builds no other tool's models. ``toolbound.arguments`` and
``toolbound.results`` hold the bases, the parsing and the events, and give
every model by its old name as well, imported on first use.

Pieces:
    read         ReadArgs; ReadResult, ReadImageResult (ImageData), ReadPdfResult
    glob         GlobArgs; GlobResult
    listing      ListArgs; ListResult (ListEntry)
    grep         GrepArgs; GrepContentResult (GrepMatch), GrepFilesResult, GrepCountResult
    bash         BashArgs; BashResult (StreamCounts, StreamPair, SpillPaths)
    change       EditArgs (EditOne), WriteArgs; EditResult, WriteResult
    apply_patch  ApplyPatchArgs; ApplyPatchResult (PatchFile, PatchHunk)
    jobs         JobOutputArgs (JobSince), JobInputArgs, JobStopArgs (their results:
                 toolbound.jobs.models)
"""
