#!/bin/sh
# The whole suite, as `make test` runs it. Each pytest run has its own temporary
# directory, log, sshd and beds (they share nothing). The integration tests mostly wait
# (on sshd, real traffic shaped to 220 Mbit/s, namespace fabrics, the demo's real-time
# ticks): two parts of about equal measured time side by side, as two halves ran before.
# The unit tests only compute: they run beside them at the lowest CPU priority, so they
# take the CPU the integration tests leave idle, never the CPU a timed integration test
# needs (at the same priority they made sshd sessions and real-time ticks late enough to
# fail). The UI tests press keys in real time and want a CPU of their own (starved, a
# key's refresh comes late): they run after the integration tests, in two parts, one on
# each core. The lists were weighed with `pytest --durations=0`; every file not listed,
# a new one too, is in the last part of its kind.
set -u
PY=${PY:-.venv/bin/python}
out=$(mktemp -d /tmp/pytest-fabtop-XXXXXX)
trap 'rm -rf "$out"' EXIT
trap 'exit 130' INT TERM
i=tests/integration
# Real traffic on namespace fabrics and in the demo's real time (~520 s, a sixth of a
# CPU), and the fault and export tests (~200 s).
first="$i/test_fabtest_netns.py $i/test_fabtest_perftest.py $i/test_fabtest_demo.py
	$i/test_fabtest_serving_netns.py $i/test_netns_traffic.py $i/test_fabtest_serving_demo.py
	$i/test_fabtest_loss_netns.py $i/test_firewall_netns.py $i/test_churn_netns.py
	$i/test_faults.py $i/test_export.py $i/test_browser.py $i/test_demo_hosts.py
	$i/test_doctor_expect.py $i/test_doctor.py"
second=""
for f in "$i"/test_*.py; do
	case " $(echo $first) " in
	*" $f "*) ;;
	*) second="$second $f" ;;
	esac
done

# A command sent to the background by a shell without job control ignores SIGINT, and
# so would every fabtop it starts: the tests that press Ctrl-C need it back.
part() { # NAME NICENESS FILES...
	name=$1 niceness=$2
	shift 2
	env --default-signal=INT nice -n "$niceness" "$PY" -m pytest -q -ra -p no:cacheprovider \
		--basetemp="$out/$name" "$@" >"$out/$name.log" 2>&1 &
}
failed=""
finish() { # NAME:PID...
	for job in "$@"; do
		wait "${job#*:}" || failed="$failed ${job%:*}"
	done
}
# shellcheck disable=SC2086 # the lists are words
part integration-1 0 $first
p1=$!
# shellcheck disable=SC2086
part integration-2 0 $second
p2=$!
part unit 19 tests/unit
p3=$!
finish integration-1:$p1 integration-2:$p2
# The snapshots, the timeline's long history, the overview and the findings (~120 CPU-s);
# the rest (~125 CPU-s).
ui1="tests/ui/test_snapshots.py tests/ui/test_timeline_axis.py tests/ui/test_app.py
	tests/ui/test_findings_view.py"
# shellcheck disable=SC2086
part ui-1 0 $ui1
p4=$!
# shellcheck disable=SC2086
part ui-2 0 tests/ui $(for f in $ui1; do echo "--ignore=$f"; done)
p5=$!
finish unit:$p3 ui-1:$p4 ui-2:$p5
for name in integration-1 integration-2 unit ui-1 ui-2; do
	echo "--- $name:"
	cat "$out/$name.log"
done
[ -z "$failed" ] || echo "--- failed:$failed"
[ -z "$failed" ]
