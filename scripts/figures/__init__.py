"""Figures: pictures and pages to look at (the gallery, screenshots, contact sheets, rating pages)."""
