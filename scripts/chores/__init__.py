"""Chores: the project's upkeep (variants, manifests, conversions, the constants the code quotes)."""
