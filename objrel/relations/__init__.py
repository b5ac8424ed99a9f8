"""Relation checks: votes and relevancy scores (common), classifier MR-1/MR-2 (classify), detector test T
(detect) and the Associated Object (associate)."""
