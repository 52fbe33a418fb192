"""Everything that fetches text from hosts: transports, the probe, pure parsers."""
