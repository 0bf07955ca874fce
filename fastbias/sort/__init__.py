"""Stage 3, sort: each score vector is sorted once per call, and the sorts are handed on.

:mod:`.order` sorts the classes and the memberships (and, when weights need
it, gives the row order); :mod:`.buckets` cuts out-of-core data into score
ranges. Kernels in :mod:`._kernels`. Imports only earlier stages.
"""
