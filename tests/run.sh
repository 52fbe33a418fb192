#!/bin/sh
# The whole suite, as `make test` runs it: the integration tests in two halves at once,
# then the unit and UI tests. The integration tests mostly wait (on sshd, real traffic
# shaped to 220 Mbit/s, namespace fabrics, the demo's real-time ticks: a quarter of two
# CPUs), so two halves side by side take about half the wall time; the unit and UI tests
# use the CPU (and the UI's snapshots want it to themselves), so they run alone after.
# The halves share nothing: each its own pytest temporary directory, sshd and beds.
set -u
PY=${PY:-.venv/bin/python}
out=$(mktemp -d /tmp/pytest-fabtop-XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
# A command sent to the background by a shell without job control ignores SIGINT, and
# so would every fabtop it starts: the tests that press Ctrl-C need it back.
env --default-signal=INT "$PY" -m pytest -q -ra -p no:cacheprovider --basetemp="$out/a" \
	tests/integration/test_[a-f]*.py >"$out/a.log" 2>&1 &
a=$!
"$PY" -m pytest -q -ra -p no:cacheprovider --basetemp="$out/b" tests/integration/test_[g-z]*.py
rb=$?
wait "$a"
ra=$?
echo "--- the other half of the integration tests:"
cat "$out/a.log"
"$PY" -m pytest -q -ra tests/unit tests/ui
ru=$?
[ "$ra" = 0 ] && [ "$rb" = 0 ] && [ "$ru" = 0 ]
