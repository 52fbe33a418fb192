"""The pure core: samples in, rates, history, rules and the fabric state out; no I/O, no asyncio."""
