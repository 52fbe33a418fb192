"""Multi-host test beds: network namespaces with a real sshd each (see docs/TESTBED.md)."""
