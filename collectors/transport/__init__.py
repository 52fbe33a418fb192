"""Transports: move the probe's bytes; they know nothing of counters."""
