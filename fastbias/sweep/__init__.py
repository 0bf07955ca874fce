"""Stage 4, sweep: the counts, from the sorted scores, for every subgroup in one walk.

:mod:`.counts` (unweighted exact int64 and weighted double-double counts),
:mod:`.chunks` (the exact algebra that joins the counts of score-range
chunks: streaming buckets, Dask partitions) and :mod:`.parallel` (the one
place that starts threads for one model). Kernels in :mod:`._kernels`.
Imports only earlier stages.
"""
