# fabtop probe: POSIX sh, sent on stdin to `sh -s -- ARGS`; prints one frame per tick
# on stdout in the wire format of docs/PROBE.md. Nothing is installed or written on the
# node: no temp files, no FIFOs. Runs under dash, busybox sh and bash.
#
# Arguments (key=value, any order; every value is checked against a strict pattern and
# the probe refuses to start on anything else):
#   interval_ms=N     tick interval, 100..60000 (default 1000)
#   sysfs=DIR         sysfs root, absolute, [A-Za-z0-9_./-] only (default /sys)
#   path=D1:D2        directories put in front of PATH, same charset (default none)
#   ifaces=A,B        netdevs to read (default: all); names ^[A-Za-z0-9_.:@-]{1,64}$
#   slow_ticks=N      slow cadence in ticks, 1..100000 (default: 60 s worth)
#   timeout_s=S       per-section timeout in seconds, 0.1..600 (default 2)
#   gpu=auto|off      GPU sources (default auto)
#   gpu_fields=F,G    nvidia-smi --query-gpu fields, [A-Za-z0-9_.,]
#   gpu_fallback=F,G  fields retried once when the first list is refused (old driver)
#   max_frames=N      stop after N frames, 0 = forever (default 0)
#
# Structure (fork cost matters: every fork per tick is paid on every node):
#   producers | awk
# - the ticker (sh builtins only, plus one `date` and one `sleep` per tick) emits
#   `T <clock_ns> <uptime> <slow>`; before a slow tick it re-globs the sysfs file lists
#   with sh globs and sends them (`R` then `N|S|n|s|C|E|W` lines);
# - the optional GPU reader: one persistent `nvidia-smi ... -lms`, lines prefixed `G `
#   by a `while read` loop (each writer writes whole short lines: pipe writes stay atomic);
# - the awk reads every listed sysfs file with getline/close (no fork per file) and runs
#   the tools of a tick all at once, each in its own pipe under `timeout`.
# When stdout closes (channel gone) awk dies on SIGPIPE; the ticker notices its next
# write failing (at most 1 s later) and stops the GPU reader, which stops nvidia-smi.

export LC_ALL=C
NL='
'

fab_die() {
	printf 'fabtop-probe: %s\n' "$1" >&2
	exit 2
}

# Name from the node: only these characters, no leading '-' (it would read as an option).
fab_okname() {
	case $1 in '' | -* | *[!A-Za-z0-9_.:@-]*) return 1 ;; esac
	[ "${#1}" -le "$2" ]
}

fab_okdirs() {
	case $1 in *[!A-Za-z0-9_./:-]*) return 1 ;; esac
	case :$1: in *::*) [ -z "$1" ] || return 1 ;; esac
	_r=$1
	while [ -n "$_r" ]; do
		_d=${_r%%:*}
		case $_d in /*) ;; *) return 1 ;; esac
		case $_r in *:*) _r=${_r#*:} ;; *) _r= ;; esac
	done
	return 0
}

fab_args() {
	IV=1000 SYS=/sys XPATH= IFACES= SLOW= TO=2 GPU=auto MAXF=0
	GF=index,uuid,name,temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw
	GFB=index,name,temperature.gpu,utilization.gpu,memory.used,memory.total,power.draw
	for a in "$@"; do
		v=${a#*=}
		case $a in
		interval_ms=*)
			case $v in '' | *[!0-9]* | 0*) fab_die "bad interval_ms" ;; esac
			[ "${#v}" -le 5 ] && [ "$v" -ge 100 ] && [ "$v" -le 60000 ] || fab_die "bad interval_ms"
			IV=$v ;;
		sysfs=*)
			case $v in /*) ;; *) fab_die "bad sysfs" ;; esac
			case $v in *[!A-Za-z0-9_./-]* | *..*) fab_die "bad sysfs" ;; esac
			SYS=${v%/}; [ -n "$SYS" ] || SYS=/ ;;
		path=*) fab_okdirs "$v" || fab_die "bad path"; XPATH=$v ;;
		ifaces=*)
			_r=$v
			while [ -n "$_r" ]; do
				fab_okname "${_r%%,*}" 64 || fab_die "bad ifaces"
				case $_r in *,*) _r=${_r#*,}; [ -n "$_r" ] || fab_die "bad ifaces" ;; *) _r= ;; esac
			done
			IFACES=$v ;;
		slow_ticks=*)
			case $v in '' | *[!0-9]* | 0*) fab_die "bad slow_ticks" ;; esac
			[ "${#v}" -le 6 ] && [ "$v" -le 100000 ] || fab_die "bad slow_ticks"
			SLOW=$v ;;
		timeout_s=*)
			case $v in '' | .* | *. | *.*.* | *[!0-9.]*) fab_die "bad timeout_s" ;; esac
			_i=${v%%.*}
			[ "${#v}" -le 7 ] && [ "$_i" -le 600 ] || fab_die "bad timeout_s"
			case $v in *[1-9]*) ;; *) fab_die "bad timeout_s" ;; esac
			TO=$v ;;
		gpu=auto | gpu=off) GPU=$v ;;
		gpu_fields=* | gpu_fallback=*)
			case $v in *[!A-Za-z0-9_.,]* | ,* | *, | *,,*) fab_die "bad ${a%%=*}" ;; esac
			[ "${#v}" -le 1500 ] || fab_die "bad ${a%%=*}"
			case $a in gpu_fields=*) GF=$v ;; *) GFB=$v ;; esac ;;
		max_frames=*)
			case $v in '' | *[!0-9]*) fab_die "bad max_frames" ;; esac
			[ "${#v}" -le 9 ] || fab_die "bad max_frames"
			MAXF=$v ;;
		*) fab_die "unknown argument" ;;
		esac
	done
	[ -n "$GF" ] || fab_die "bad gpu_fields"
	[ -n "$SLOW" ] || SLOW=$(((60000 + IV - 1) / IV))
}

fab_em() {
	printf '%s\n' "$1" 2>/dev/null || fab_gone
}

# Our output pipe is gone: stop the GPU reader (it stops nvidia-smi) and leave.
fab_gone() {
	[ -n "$GP" ] && kill "$GP" 2>/dev/null
	exit 0
}

fab_refuse() {
	_n=$2
	case $_n in *"$NL"*) _n='(a name containing a newline)' ;; esac
	case "$NL$SEEN$NL" in *"$NL$1 $_n$NL"*) return 0 ;; esac
	SEEN="$SEEN$NL$1 $_n"
	fab_em "W refused $1 name: $_n"
}

fab_exists() {
	[ -e "$1" ] || [ -h "$1" ]
}

# Every file of a glob, validated, sent as "<code> <kind> <rel>" (rel = $3/<file>).
fab_files() {
	for _f in "$4"/*; do
		fab_exists "$_f" || continue
		_b=${_f##*/}
		if fab_okname "$_b" 128; then fab_em "$1 $2 $3/$_b"; else fab_refuse file "$3/$_b"; fi
	done
}

fab_scan() {
	fab_em R
	for d in "$SYS"/class/net/*; do
		fab_exists "$d" || continue
		n=${d##*/}
		fab_okname "$n" 64 || { fab_refuse netdev "$n"; continue; }
		if [ -n "$IFACES" ]; then
			case ",$IFACES," in *",$n,"*) ;; *) continue ;; esac
		fi
		fab_files N sysnet "$n/statistics" "$d/statistics"
		for f in mtu operstate speed carrier_changes carrier_up_count carrier_down_count; do
			fab_exists "$d/$f" && fab_em "N sysnet $n/$f"
		done
		if fab_exists "$d/device"; then
			fab_em "n sysnet $n/device"
			for f in current_link_speed current_link_width max_link_speed max_link_width; do
				fab_exists "$d/device/$f" && fab_em "S sysnet $n/device/$f"
			done
			for h in "$d"/device/hwmon/hwmon*; do
				fab_exists "$h/name" || continue
				hb=${h##*/}
				fab_okname "$hb" 64 || continue
				fab_em "S sysnet $n/device/hwmon/$hb/name"
				for t in "$h"/temp*_input; do
					fab_exists "$t" || continue
					tb=${t##*/}
					fab_okname "$tb" 64 && fab_em "N sysnet $n/device/hwmon/$hb/$tb"
				done
			done
			fab_em "E $n"
		elif [ -n "$IFACES" ]; then
			fab_em "E $n"
		fi
		fab_files S sysnet "$n/ecn/roce_np/enable" "$d/ecn/roce_np/enable"
		fab_files S sysnet "$n/ecn/roce_rp/enable" "$d/ecn/roce_rp/enable"
	done
	for d in "$SYS"/class/infiniband/*; do
		fab_exists "$d" || continue
		n=${d##*/}
		fab_okname "$n" 64 || { fab_refuse rdma "$n"; continue; }
		for f in fw_ver hca_type board_id node_guid; do
			fab_exists "$d/$f" && fab_em "S sysib $n/$f"
		done
		for p in "$d"/ports/*; do
			fab_exists "$p" || continue
			pn=${p##*/}
			fab_okname "$pn" 16 || { fab_refuse port "$n/$pn"; continue; }
			for f in state phys_state rate link_layer lid sm_lid; do
				fab_exists "$p/$f" && fab_em "N sysib $n/ports/$pn/$f"
			done
			for c in counters counters_ext hw_counters; do
				fab_files N sysib "$n/ports/$pn/$c" "$p/$c"
			done
			fab_files S sysib "$n/ports/$pn/gid_attrs/ndevs" "$p/gid_attrs/ndevs"
		done
		fab_files s sysib "$n/device/net" "$d/device/net"
	done
	for c in "$SYS"/devices/system/cpu/cpu*/thermal_throttle; do
		fab_exists "$c" || continue
		cb=${c%/thermal_throttle}
		cb=${cb##*/}
		fab_okname "$cb" 16 || continue
		for f in core_throttle_count package_throttle_count; do
			fab_exists "$c/$f" && fab_em "C cputhrottle devices/system/cpu/$cb/thermal_throttle/$f"
		done
	done
}

fab_sleep_ms() {
	if [ "$FRAC" = 1 ]; then
		_f=$(($1 % 1000))
		case $_f in ? ) _f=00$_f ;; ?? ) _f=0$_f ;; esac
		sleep "$(($1 / 1000)).$_f" 2>/dev/null
	else
		sleep "$((($1 + 999) / 1000))" 2>/dev/null
	fi
}

fab_now() {
	if [ "$NSOK" = 1 ]; then NOW=$(date +%s%N); else NOW=$(date +%s)000000000; fi
}

fab_ticker() {
	left=0 dl=0 SEEN=
	ivns=$((IV * 1000000))
	while :; do
		s=0
		if [ "$left" -le 0 ]; then fab_scan; left=$SLOW; s=1; fi
		left=$((left - 1))
		fab_now
		up=0
		read -r up _ </proc/uptime 2>/dev/null
		fab_em "T $NOW $up $s"
		dl=$((dl + ivns))
		rem=$(((dl - NOW) / 1000000))
		if [ "$rem" -le 0 ] || [ "$rem" -gt "$IV" ]; then dl=$((NOW + ivns)); rem=$IV; fi
		# Sleep in slices of at most 1 s and write a keepalive after each: a closed
		# channel is noticed within a second even at a 60 s interval.
		while [ "$rem" -gt 1000 ]; do
			sleep 1 2>/dev/null
			fab_em K
			rem=$((rem - 1000))
		done
		fab_sleep_ms "$rem"
	done
}

# Supervises nvidia-smi: retries once with the fallback fields when the first list
# fails at start (unknown field on an old driver), restarts with backoff when it dies.
# Every child's pid is announced so the reader can stop it on its way out.
fab_gpu_sup() {
	f=$GF tried=0 back=1
	while :; do
		read -r u0 _ </proc/uptime 2>/dev/null || u0=0
		nvidia-smi --query-gpu="$f" --format=csv,noheader,nounits -lms "$IV" </dev/null 2>/dev/null &
		np=$!
		printf '@@fabtop-ctl P %s %s\n' "$np" "$f" || { kill "$np" 2>/dev/null; exit 0; }
		wait "$np"
		rc=$?
		read -r u1 _ </proc/uptime 2>/dev/null || u1=0
		printf '@@fabtop-ctl X %s\n' "$rc" || exit 0
		ran=$((${u1%.*} - ${u0%.*}))
		if [ "$rc" -ne 0 ] && [ "$tried" = 0 ] && [ "$ran" -lt 10 ] && [ "$f" != "$GFB" ]; then
			f=$GFB tried=1
			continue
		fi
		[ "$ran" -gt 120 ] && back=1
		sleep "$back" </dev/null 2>/dev/null &
		printf '@@fabtop-ctl P %s %s\n' "$!" "$f" || exit 0
		wait "$!"
		back=$((back * 2))
		[ "$back" -gt 60 ] && back=60
	done
}

fab_gpu_prefix() {
	cp=
	trap '[ -n "$cp" ] && kill "$cp" 2>/dev/null; exit 0' TERM
	while IFS= read -r l; do
		case $l in
		'@@fabtop-ctl P '*)
			l=${l#'@@fabtop-ctl P '}
			cp=${l%% *}
			printf 'g start %s\n' "${l#* }" || break ;;
		'@@fabtop-ctl X '*) printf 'g exit %s\n' "${l#'@@fabtop-ctl X '}" || break ;;
		*) printf 'G %s\n' "$l" || break ;;
		esac
	done
	[ -n "$cp" ] && kill "$cp" 2>/dev/null
	exit 0
}

fab_producers() {
	GP=
	if [ "$GKIND" = nvidia ]; then
		fab_gpu_sup | fab_gpu_prefix &
		GP=$!
	fi
	# From here a write to a closed pipe fails instead of killing us, so fab_gone runs.
	trap '' PIPE
	fab_ticker
}

fab_main() {
	fab_args "$@"
	[ -n "$XPATH" ] && PATH=$XPATH:$PATH
	export PATH
	NSOK=0 FRAC=0
	fab_now
	case $NOW in ???????????????????) NSOK=1 ;; esac
	case $NOW in *[!0-9]*) NSOK=0 ;; esac
	sleep 0.001 2>/dev/null && FRAC=1
	[ "$FRAC" = 1 ] || [ "$IV" -ge 1000 ] || IV=1000
	TK=
	if command -v timeout >/dev/null 2>&1; then
		TK=timeout
		timeout -k 1 10 true 2>/dev/null && TK="timeout -k 1"
	fi
	HAVE=
	for t in ethtool mlnx_qos dcb nvidia-smi amd-smi rocm-smi; do
		command -v "$t" >/dev/null 2>&1 && HAVE="$HAVE $t"
	done
	HAVE="$HAVE "
	GKIND=none
	if [ "$GPU" = auto ]; then
		case $HAVE in
		*" nvidia-smi "*) GKIND=nvidia ;;
		*" amd-smi "*) GKIND=amd-smi ;;
		*" rocm-smi "*) GKIND=rocm-smi ;;
		esac
	else
		GKIND=off
	fi
	AWKI=
	case $(awk -W version 2>&1 </dev/null) in *mawk*) AWKI="-W interactive" ;; esac
	fab_producers | awk $AWKI -v IV="$IV" -v SYS="$SYS" -v TK="$TK" -v TO="$TO" -v HAVE="$HAVE" \
		-v GKIND="$GKIND" -v GF="$GF" -v MAXF="$MAXF" -v SLOW="$SLOW" "$FAB_AWK"
}

FAB_AWK='
# mawk runs with -W interactive (else it waits for a full input buffer) and then writes
# stdout unbuffered: collect output and write it in large pieces.
function o(l) {
	OB = OB l "\n"
	if (length(OB) > 32768) { print OB; OB = "" }
}
function esc(l) {
	if (length(l) > 65536) l = substr(l, 1, 65536)
	if (substr(l, 1, 2) == "@@") l = "@" l
	return l
}
function clean(s) {
	gsub(/[^A-Za-z0-9_.:@\/ =,()-]/, "?", s)
	return substr(s, 1, 200)
}
function okname(n) {
	return n ~ /^[A-Za-z0-9_.:@][A-Za-z0-9_.:@-]*$/ && length(n) <= 64
}
function rd(p,   l, r) {
	r = (getline l < p)
	close(p)
	if (r < 0) return 0
	RV = (r > 0) ? l : ""
	return 1
}
function warn(s) {
	if (nw < 200) W[++nw] = s
}
function addns(ns, ms,   hi, lo, c) {
	hi = substr(ns, 1, length(ns) - 9) + 0
	lo = substr(ns, length(ns) - 8) + ms * 1000000
	c = int(lo / 1000000000)
	return sprintf("%.0f%09.0f", hi + c, lo - c * 1000000000)
}
function section(kind, subj, rns, st, det) {
	o(sprintf("@@section %s %s %s %s%s", kind, subj, rns, st, (det == "" ? "" : " " det)))
}
# One grep per tick reads every listed file: mawk aborts on a read error (EINVAL from
# `speed` on a down link, EIO from a PMA counter), grep -s skips the file and goes on.
function read_files(slow,   i, cmd, l, n, ch, p, rel) {
	split("", VAL)
	n = 0; ch = ""
	for (i = 1; i <= nf; i++) {
		if (FM[i] == "n" || FM[i] == "s" || (FM[i] == "S" && !slow)) continue
		ch = ch " " FP[i]; n++
		if (length(ch) > 100000) { grep_chunk(ch); ch = ""; n = 0 }
	}
	if (slow) for (i = 1; i <= nc; i++) {
		ch = ch " " CP[i]; n++
		if (length(ch) > 100000) { grep_chunk(ch); ch = ""; n = 0 }
	}
	if (n) grep_chunk(ch)
}
function grep_chunk(list,   cmd, l, c, p) {
	cmd = "cd " SYS " && exec grep -sH \"\" --" list " </dev/null 2>/dev/null"
	while ((cmd | getline l) > 0) {
		c = index(l, ":")
		if (c < 2) continue
		p = substr(l, 1, c - 1)
		if (!(p in VAL)) VAL[p] = substr(l, c + 1)
	}
	close(cmd)
}
# Slow-cadence files go to their own section (<kind>_slow) so the collector can keep the
# latest one between slow ticks without guessing which lines of a tick are missing.
function sysfs_section(kind, slow,   i) {
	section(kind, "-", CNS, "ok", "")
	for (i = 1; i <= nf; i++) {
		if (FK[i] != kind) continue
		if (FM[i] == "n") { o(esc(FR[i] " -")); continue }
		if (FM[i] == "s" || FM[i] == "S") continue
		if (FP[i] in VAL) o(esc(FR[i] " " VAL[FP[i]]))
	}
	if (!slow) return
	section(kind "_slow", "-", CNS, "ok", "")
	for (i = 1; i <= nf; i++) {
		if (FK[i] != kind) continue
		if (FM[i] == "s") { o(esc(FR[i] " -")); continue }
		if (FM[i] == "S" && (FP[i] in VAL)) o(esc(FR[i] " " VAL[FP[i]]))
	}
}
function cpu_section(   i, k, b, sum, ord, no) {
	section("cputhrottle", "-", CNS, "ok", "")
	no = 0
	for (i = 1; i <= nc; i++) {
		if (!(CP[i] in VAL)) continue
		b = CR[i]; sub(/.*\//, "", b)
		if (!(b in sum)) { sum[b] = 0; ord[++no] = b }
		sum[b] += VAL[CP[i]]
	}
	for (k = 1; k <= no; k++)
		o(sprintf("devices/system/cpu/cpu*/thermal_throttle/%s %.0f", ord[k], sum[ord[k]]))
}
function job(kind, subj, cmd) {
	nj++
	JK[nj] = kind; JS[nj] = subj; JC[nj] = cmd
}
function has(t) { return index(HAVE, " " t " ") > 0 }
# Every tool of a tick runs at once, each in its own pipe under `timeout`, so one hung
# tool costs the frame one timeout, not one per interface. Each shell prints an empty
# line first: reading it starts them all before the first one is drained.
function run_jobs(   i, l, n, c, k, rc, st, det) {
	if (nj == 0) return
	for (i = 1; i <= nj; i++) {
		JN[i] = 0; JR[i] = ""
		JP[i] = "exec </dev/null 2>&1; echo; " TKC JC[i] "; printf \"%s\\n\" \"" NONCE " e $?\""
		JP[i] | getline l
	}
	for (i = 1; i <= nj; i++) {
		while ((JP[i] | getline l) > 0) {
			c = index(l, NONCE " e ")
			if (c > 0) {
				# output without a final newline: our marker is glued to its last line
				if (c > 1 && JN[i] < 100000) { n = ++JN[i]; JL[i, n] = substr(l, 1, c - 1) }
				split(substr(l, c), k, " ")
				JR[i] = k[3]
				continue
			}
			if (JN[i] < 100000) { n = ++JN[i]; JL[i, n] = l }
		}
		close(JP[i])
	}
	for (i = 1; i <= nj; i++) {
		rc = JR[i]; det = ""
		if (rc == "") { st = "error"; det = "no exit status" }
		else if (rc == 0) st = "ok"
		else if (TK != "" && (rc == 124 || rc == 137 || rc == 143)) { st = "timeout"; det = "after " TO "s" }
		else { st = "error"; det = "rc=" rc }
		if (JK[i] == "gpu_amd") det = (det == "" ? "" : det " ") "tool=" JT
		section(JK[i], JS[i], CNS, st, det)
		for (n = 1; n <= JN[i]; n++) { o(esc(JL[i, n])); delete JL[i, n] }
	}
	nj = 0
}
function gpu_section(   k, i, l, c, st, fresh, newest) {
	newest = -1
	for (i = 1; i <= ng; i++) if (GT[GO[i]] > newest) newest = GT[GO[i]]
	st = (newest >= 0 && tn - newest < 3) ? "ok" : "stale"
	section("gpu_nvidia", "-", (ng ? GN[newest] : "-"), st, (ng ? "" : "no line yet"))
	# GN gains one entry per tick with GPU lines; only ticks still in GT can be asked for.
	for (k in GN) if (k + 0 < newest) delete GN[k]
	o(esc("# " GFIELDS))
	for (i = 1; i <= ng; i++) {
		k = GO[i]
		if (st == "ok" && tn - GT[k] >= 3) continue
		if (st == "stale" && GT[k] != newest) continue
		o(esc(GL[k]))
	}
}
function gpu_fields(f,   a, n, i) {
	GFIELDS = f; GKEY = 0
	n = split(f, a, ",")
	for (i = 1; i <= n; i++) if (a[i] == "index" || a[i] == "uuid" || a[i] == "pci.bus_id") { GKEY = i; break }
	ng = 0; split("", GL); split("", GT); split("", GO)
}
function gpu_line(l,   k, a, n) {
	if (GKEY) {
		n = split(l, a, ",")
		k = a[GKEY]; gsub(/^ +| +$/, "", k)
	} else {
		if (GBATCH != tn) { ng = 0; split("", GL); split("", GT); split("", GO); GBATCH = tn }
		k = ng + 1
	}
	if (!(k in GL)) { if (ng >= 64) return; GO[++ng] = k }
	GL[k] = l; GT[k] = tn; GN[tn] = LNS
}
function tick(ns, up, slow,   l, a, lag, ms, i, t) {
	tn++
	LNS = ns
	if (PSLOW) slow = 1
	lag = 0
	if (rd("/proc/uptime")) { split(RV, a, " "); lag = a[1] - up }
	# The ticker does not wait for us: a tick we reach a whole interval late has a newer
	# one queued behind it, so drop it rather than stamp old times on fresh readings.
	if (lag * 1000 >= IV && up > 0) { PSLOW = slow; skipped++; return }
	PSLOW = 0
	CNS = ns
	if (lag >= 0.02 && up > 0) { ms = int(lag * 1000); CNS = addns(ns, ms); up = a[1] }
	seq++
	o(sprintf("@@fabtop-frame %d %s %s %s.%s", seq, CNS, up, substr(CNS, 1, length(CNS) - 9), substr(CNS, length(CNS) - 8, 3)))
	read_files(slow)
	sysfs_section("sysnet", slow)
	sysfs_section("sysib", slow)
	if (slow && nc) cpu_section()
	for (i = 1; i <= ne; i++) {
		if (has("ethtool")) job("ethtool_S", E[i], "ethtool -S " E[i])
		if (!slow) continue
		if (has("ethtool")) job("ethtool_i", E[i], "ethtool -i " E[i])
		if (has("mlnx_qos")) job("mlnx_qos", E[i], "mlnx_qos -i " E[i])
		if (has("dcb")) job("dcb_pfc", E[i], "dcb pfc show dev " E[i])
		if (has("dcb")) job("dcb_apptrust", E[i], "dcb apptrust show dev " E[i])
		if (has("dcb")) job("dcb_app", E[i], "dcb app show dev " E[i])
		if (has("dcb")) job("dcb_ets", E[i], "dcb ets show dev " E[i])
		if (has("dcb")) job("dcb_buffer", E[i], "dcb buffer show dev " E[i])
	}
	if (slow && (GKIND == "amd-smi" || GKIND == "rocm-smi")) {
		JT = GKIND
		if (GKIND == "amd-smi") job("gpu_amd", "-", "amd-smi metric --json")
		else job("gpu_amd", "-", "rocm-smi --showuse --showtemp --showpower --showmeminfo vram --json")
	}
	run_jobs()
	if (slow) {
		if (!has("ethtool")) { section("ethtool_S", "-", CNS, "missing", "ethtool"); section("ethtool_i", "-", CNS, "missing", "ethtool") }
		if (!has("mlnx_qos")) section("mlnx_qos", "-", CNS, "missing", "mlnx_qos")
		if (!has("dcb")) section("dcb_pfc", "-", CNS, "missing", "dcb")
		if (GKIND == "none") section("gpu_nvidia", "-", CNS, "missing", "no nvidia-smi, amd-smi or rocm-smi")
	}
	if (GKIND == "nvidia") gpu_section()
	section("probe", "-", CNS, "ok", "")
	o("interval_ms " IV)
	o("slow " (slow ? 1 : 0))
	if (skipped) { o("skipped_ticks " skipped); skipped = 0 }
	for (i = 1; i <= nw; i++) o(esc("warning " W[i]))
	nw = 0
	o("@@end " seq)
	print OB
	OB = ""
	fflush()
	if (MAXF > 0 && seq >= MAXF) exit 0
}
BEGIN {
	ORS = ""  # print, unlike printf %s, keeps bytes after a NUL
	srand()
	NONCE = sprintf("@@fabtop-%d-%d", int(rand() * 2147483647), int(rand() * 2147483647))
	TKC = (TK == "" ? "" : TK " " TO " ")
	if (TK == "") warn("no timeout command: tools run without a time limit")
	gpu_fields(GF)
	MAXF += 0; IV += 0
}
$1 == "T" { tick($2, $3, $4 + 0); next }
$1 == "G" { gpu_line(substr($0, 3)); next }
$1 == "g" {
	if ($2 == "start") { if ($3 != GFIELDS && $3 != "") gpu_fields($3) }
	else if ($2 == "exit") warn("nvidia-smi exited rc=" clean($3))
	next
}
$1 == "R" { nf = 0; ne = 0; nc = 0; next }
$1 == "N" || $1 == "S" || $1 == "n" || $1 == "s" {
	if (NF != 3 || $3 ~ /\.\./) next
	nf++; FM[nf] = $1; FK[nf] = $2; FR[nf] = $3
	FP[nf] = "class/" ($2 == "sysib" ? "infiniband" : "net") "/" $3
	next
}
$1 == "C" { if (NF == 3 && $3 !~ /\.\./) { nc++; CR[nc] = $3; CP[nc] = $3 }; next }
$1 == "E" { if (NF == 2 && okname($2)) E[++ne] = $2; else warn("refused netdev name: " clean($2)); next }
$1 == "W" { warn(clean(substr($0, 3))); next }
# Keepalive between the ticks of a long interval: an empty line (ignored by the decoder)
# makes a closed channel fail our write within a second.
$1 == "K" { print "\n"; fflush(); next }
'

fab_main "$@" </dev/null
exit
