"""Pure parsers: text in, typed records plus warnings out; they never raise on bad input."""
