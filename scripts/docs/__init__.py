"""Scripts that write documentation pages from the committed files."""
