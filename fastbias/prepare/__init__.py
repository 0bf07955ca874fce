"""Stage 2, prepare: score-independent structures, built once and shared by every model.

:mod:`.memberships` turns identity columns into :class:`Memberships` (which
rows belong to which subgroup, with the labels) and groups subgroups by the
rows they are compared with; :mod:`.folds` derives a fold's memberships;
:mod:`.encoded` encodes one piece of out-of-core data. Kernels in
:mod:`._kernels`. Imports only the validate stage.
"""
