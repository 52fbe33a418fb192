# fabtop launcher: POSIX sh, sent on stdin to
# `exec sh -s -- limit_s=N [kill_ms=M] [path=D1:D2] -- TOOL ARGS...`;
# runs one test tool (perftest, iperf3, sockperf: the node's own) and ends it, and
# everything it started, by its process group. Nothing is installed or written on the
# node.
#
# Output: the tool's stdout and stderr, as it writes them, then one trailer line
#   @@fabtop-launch exit <status> <elapsed_ms>     the tool ended (status as `wait` gives)
#   @@fabtop-launch timeout <limit_s> <elapsed_ms> the limit passed: the tool was ended
#   @@fabtop-launch missing <tool>                 the tool is not on the node's PATH
# and, with kill_ms=M, before the exit line:
#   @@fabtop-launch killed <pid> <elapsed_ms>      fabtop's kill: the tool, by its pid
# and the launcher exits 0 (a status of its own means the launcher itself failed).
# path=D1:D2 puts the host's configured directories in front of PATH, as for the probe:
# a non-login SSH session's PATH lacks /usr/local/bin or /opt/mellanox/bin, where a
# source build or MLNX_OFED puts perftest.
# kill_ms=M ends the tool on purpose M ms after its start, by its pid, with KILL (a lost
# worker, as `fabtop test loss` needs it: no handler of the tool's runs); only that pid,
# which this launcher started, and the rest of the group at the end as always.
#
# Lifetime, as the probe's (collectors/probe.sh): stdin stays open after the script for
# as long as fabtop wants the tool; a watcher reads it to EOF (fabtop done, Ctrl-C, the
# connection dropped), then ends the whole process group: TERM, KILL after 1 s. The limit
# and the tool's own end do the same, so no server, client or sleep outlives a run.

export LC_ALL=C

fl_die() {
	printf 'fabtop-launch: %s\n' "$1" >&2
	exit 2
}

# fab_pgok (PGOK=1 when this shell leads its process group: only then is `kill 0` ours
# alone; otherwise only the tool's pid is ended) is lifetime.sh's, put in front of this.

fl_end() {
	trap '' TERM
	if [ "$PGOK" = 1 ]; then
		# The tool by its pid too: one that made a process group of its own (GNU
		# timeout does) is not in ours.
		kill -TERM "$TP" 0 2>/dev/null
		sleep 1 2>/dev/null
		kill -KILL "$TP" 0 2>/dev/null
	else
		kill -TERM "$TP" 2>/dev/null
		sleep 1 2>/dev/null
		kill -KILL "$TP" "$WP" "$LP" $KP 2>/dev/null
	fi
}

fl_ms() {
	# Milliseconds since the launcher started (date +%s%N where it has it; else seconds).
	_n=$(date +%s%N 2>/dev/null)
	case $_n in *[!0-9]* | '') _n=$(($(date +%s) * 1000000000)) ;; esac
	MS=$(((_n - T0) / 1000000))
}

fl_main() {
	exec 3<&0 </dev/null
	case $1 in limit_s=*) LIMIT=${1#limit_s=} ;; *) fl_die "limit_s= first" ;; esac
	case $LIMIT in '' | *[!0-9]* | 0*) fl_die "bad limit_s" ;; esac
	[ "${#LIMIT}" -le 4 ] && [ "$LIMIT" -le 3600 ] || fl_die "bad limit_s"
	shift
	KILL_MS=
	case $1 in
	kill_ms=*)
		KILL_MS=${1#kill_ms=}
		case $KILL_MS in '' | *[!0-9]* | 0*) fl_die "bad kill_ms" ;; esac
		[ "${#KILL_MS}" -le 7 ] && [ "$KILL_MS" -lt $((LIMIT * 1000)) ] || fl_die "bad kill_ms"
		shift
		;;
	esac
	case $1 in
	path=*)
		XPATH=${1#path=}
		case $XPATH in '' | *[!A-Za-z0-9_./:-]* | *::* | :* | *:) fl_die "bad path" ;; esac
		case :$XPATH in *:[!/]*) fl_die "bad path" ;; esac
		PATH=$XPATH:$PATH
		export PATH
		shift
		;;
	esac
	[ "$1" = -- ] || fl_die "-- before the tool"
	shift
	[ $# -ge 1 ] || fl_die "no tool"
	if ! command -v "$1" >/dev/null 2>&1; then
		printf '@@fabtop-launch missing %s\n' "$1"
		exit 0
	fi
	fab_pgok
	T0=$(date +%s%N 2>/dev/null)
	case $T0 in *[!0-9]* | '') T0=$(($(date +%s) * 1000000000)) ;; esac
	"$@" </dev/null 2>&1 &
	TP=$!
	# The watcher: fabtop closing stdin ends everything.
	(
		while IFS= read -r _l; do :; done
		fl_end
	) <&3 3<&- >/dev/null 2>&1 &
	WP=$!
	exec 3<&-
	# The limit: a line says it, then the tool (and the group) is ended.
	(
		sleep "$LIMIT"
		fl_ms
		printf '\n@@fabtop-launch timeout %s %s\n' "$LIMIT" "$MS"
		kill -TERM "$TP" 2>/dev/null
	) &
	LP=$!
	KP=
	if [ -n "$KILL_MS" ]; then
		# The kill on purpose: seconds with a fraction where sleep takes one (GNU, busybox,
		# BSD), else whole seconds rounded up (POSIX sleep).
		(
			_f=00$((KILL_MS % 1000))
			sleep "$((KILL_MS / 1000)).${_f#"${_f%???}"}" 2>/dev/null ||
				sleep "$(((KILL_MS + 999) / 1000))"
			kill -KILL "$TP" 2>/dev/null || exit 0
			fl_ms
			printf '\n@@fabtop-launch killed %s %s\n' "$TP" "$MS"
		) &
		KP=$!
	fi
	wait "$TP"
	rc=$?
	# Killed by the line above: its line comes before the exit line.
	[ -n "$KP" ] && [ "$rc" = 137 ] && wait "$KP"
	if kill -0 "$LP" 2>/dev/null; then
		fl_ms
		printf '\n@@fabtop-launch exit %s %s\n' "$rc" "$MS"
	fi
	trap '' TERM
	if [ "$PGOK" = 1 ]; then
		(fl_end) </dev/null >/dev/null 2>&1 &
	else
		fl_end
	fi
	exit 0
}

# Everything runs from this one last line (see probe.sh): nothing of the script is left
# unread on stdin for the watcher.
fl_main "$@"; exit
