"""Rendering, apart from the algorithms: pictures (one colour map), the audit's HTML and
export, and the benchmark's markdown, table and plot."""
