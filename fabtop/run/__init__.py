"""The running machinery: sessions over transports, focus, discovery, recordings, export."""
