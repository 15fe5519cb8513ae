"""Measurements: runs that write a result record (most under assets/results/) or check one."""
