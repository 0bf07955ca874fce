"""Folds: the memberships of a subset of rows (a cross-validation fold) from prepared ones.

Derived in O(fold rows + fold memberships) through a row -> identity-row map
built once, instead of preparing the subgroups again.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as K
from .memberships import Memberships, memberships_from_csr


def identity_positions(memberships: Memberships) -> np.ndarray:
    """Row -> position in ``memberships.identity_rows`` (-1 for rows in no subgroup)."""
    return K.identity_positions_of(memberships.identity_rows, memberships.n_rows)


def fold_memberships(full: Memberships, rows: np.ndarray, positions: np.ndarray) -> Memberships:
    """The memberships of ``full``'s rows ``rows`` (unique positions, in fold order).

    ``positions`` is :func:`identity_positions` of ``full``. A repeated row is
    a ValueError naming it and both positions.
    """
    identity_rows, row_ptr, row_groups, duplicate_at = K.fold_row_csr(
        rows, positions, full.row_ptr, full.row_groups)
    if duplicate_at >= 0:
        row = int(rows[duplicate_at])
        raise ValueError(f"index has a duplicate row: {row} at position {duplicate_at} "
                         f"(first at {int(np.flatnonzero(rows == row)[0])}); a fold's rows "
                         f"must be unique")
    return memberships_from_csr(full.labels[rows], full.names, identity_rows, row_ptr, row_groups)
