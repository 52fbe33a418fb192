# fabtop probe: POSIX sh, sent on stdin to `exec sh -s -- ARGS`; prints one frame per tick
# on stdout in the wire format of docs/PROBE.md. Nothing is installed or written on the
# node: no temp files, no FIFOs. Runs under dash, busybox sh and bash.
#
# Lifetime: stdin stays open after the script for as long as the connection lives. A
# watcher reads it to EOF, then ends the probe's whole process group (TERM, then KILL
# after 1 s): the channel closing or fabtop going away ends everything the probe started,
# persistent ones (nvidia-smi -lms, the GPU supervisor, sysfs readers, sleeps, tools)
# included, even when the probe is blocked and never writes. The probe's own end
# (max_frames, a failed write) ends the group the same way. When the probe is not its
# process group's leader (started by another program without a new session), killing
# the group would kill the caller: it then ends only what it knows (see fab_end).
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
#   section_bytes=N   content bytes kept per section, 4096..frame_bytes (default 8 MiB)
#   frame_bytes=N     content bytes kept per frame, 65536..16711680 (default 15 MiB)
#   fw_sudo=0|1       read the packet filter through `sudo -n` when not root (default 0)
#   optics_sudo=0|1   read module EEPROMs (`ethtool -m`) through `sudo -n` when not root
#                     (default 0)
#   mlxlink=0|1       also run `mlxlink -d <pci> -m -c --json` (NVIDIA MFT) on optics rounds,
#                     one PCI function a round, where installed (default 0)
#   optics_s=N        least seconds between optics rounds (ethtool -m, --show-fec, devlink
#                     health show, on slow ticks), 0..86400 (default 30)
#
# Structure (fork cost matters: every fork per tick is paid on every node):
#   producers | awk
# - the ticker (sh builtins only, plus one `date` and one `sleep` per tick) emits
#   `T <clock_ns> <uptime> <slow>`; before a slow tick it re-globs the sysfs file lists
#   with sh globs and sends them (`R` then `N|S|n|s|C|E|W` lines);
# - the optional GPU reader: one persistent `nvidia-smi ... -lms`, lines prefixed `G `
#   by a `while read` loop (each writer writes whole short lines: pipe writes stay atomic);
# - sysfs readers: persistent sh loops (builtins only, no fork per tick or per file)
#   started by the awk, one per ~60 KB of file list, that read their files when told and
#   write one `V` line per file into the awk's own input (see rd_cmd in probe.awk: a read
#   stuck in the kernel stops a reader, never the awk);
# - the awk runs the tools of a tick all at once, each in its own pipe under `timeout`,
#   and writes the frame when its readers are done or their deadline passed.
# When stdout closes (channel gone) awk dies on SIGPIPE; the ticker notices its next
# write failing (at most 1 s later) and leaves; the probe then ends its process group.

export LC_ALL=C
# The carried files: collectors/probe.py probe_script() fills each of these lines with a
# file's text, single-quoted (nothing is written on the node): the fast probe
# (probe_fast.py), the macOS probe (probe_darwin.zsh) and the awk fab_main runs
# (probe.awk). Run without them, the probe refuses to start.
FAB_PY=
FAB_ZSH=
FAB_AWK=
# Software versions (issue 15; docs/PROBE.md): constants both probes run on slow ticks of
# NVIDIA GPU nodes, passed in the environment (the fast probe reads them there). The
# NCCL scan: each distinct libnccl.so* file a readable process maps, and for a pip
# wheel's libnccl.so.2 (no version in its name) the dist-info beside it. Paths from
# the node are only ever expanded inside double quotes.
FAB_NCCL='grep -s -h -o "/.*/libnccl\.so[^/]*" /proc/[0-9]*/maps | sort -u | head -n 16 |
while IFS= read -r p; do
	printf "lib %s\n" "$p"
	case $p in
	*" (deleted)") ;;
	*/nvidia/nccl/lib/libnccl.so.2)
		for d in "${p%/nvidia/nccl/lib/*}"/nvidia_nccl_cu*.dist-info; do
			if [ -d "$d" ]; then printf "dist %s\n" "${d##*/}"; fi
		done ;;
	esac
done'
FAB_DPKGF='${db:Status-Abbrev} ${Version}\n'
export FAB_NCCL FAB_DPKGF
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

# A threshold's value as probe.py writes it: 0 to 16 integer digits, no leading zero, at
# most 6 decimals (probe_fast.py's DECIMAL_RE).
fab_decimal() {
	case $1 in '' | .* | *. | *.*.* | *[!0-9.]* | 0[0-9]*) return 1 ;; esac
	_i=${1%%.*}
	[ "${#_i}" -le 16 ] || return 1
	case $1 in *.*) _d=${1#*.}; [ "${#_d}" -le 6 ] ;; esac
}

fab_args() {
	IV=1000 SYS=/sys XPATH= IFACES= SLOW= TO=2 GPU=auto MAXF=0 SCAP=8388608 FCAP=15728640
	PROBE=auto HWT= PTT= FWS=0 OPTS=30 OMS=0 MLX=0
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
		section_bytes=* | frame_bytes=*)
			case $v in '' | *[!0-9]* | 0*) fab_die "bad ${a%%=*}" ;; esac
			[ "${#v}" -le 8 ] || fab_die "bad ${a%%=*}"
			case $a in section_bytes=*) SCAP=$v ;; *) FCAP=$v ;; esac ;;
		probe=auto | probe=python | probe=sh) PROBE=$v ;;
		fw_sudo=0 | fw_sudo=1) FWS=$v ;;
		optics_sudo=0 | optics_sudo=1) OMS=$v ;;
		mlxlink=0 | mlxlink=1) MLX=$v ;;
		optics_s=*)
			case $v in '' | *[!0-9]* | 0?*) fab_die "bad optics_s" ;; esac
			[ "${#v}" -le 5 ] && [ "$v" -le 86400 ] || fab_die "bad optics_s"
			OPTS=$v ;;
		ib_hw_tick=* | ib_port_tick=*)
			case $v in '' | *[!A-Za-z0-9_,-]* | ,* | *, | *,,*) fab_die "bad ${a%%=*}" ;; esac
			[ "${#v}" -le 1500 ] || fab_die "bad ${a%%=*}"
			case $a in ib_hw_tick=*) HWT=$v ;; *) PTT=$v ;; esac ;;
		# The fast probe's PFC watchdog thresholds (this probe has none): checked alike.
		storm_pause_ratio=* | storm_flat_fraction=* | storm_flat_bytes_per_s=*)
			fab_decimal "$v" || fab_die "bad ${a%%=*}"
			case $a in
			storm_flat_bytes_per_s=*) ;;
			*) case $v in 0 | 0.* | 1 | 1.*) ;; *) fab_die "bad ${a%%=*}" ;; esac
				case $v in 1.*[1-9]*) fab_die "bad ${a%%=*}" ;; esac ;;
			esac ;;
		*) fab_die "unknown argument" ;;
		esac
	done
	[ -n "$GF" ] || fab_die "bad gpu_fields"
	# 16711680 = 16 MiB - 64 KiB: frames.py drops a frame over 16 MiB, the probe section
	# and the headers need the rest.
	[ "$FCAP" -ge 65536 ] && [ "$FCAP" -le 16711680 ] || fab_die "bad frame_bytes"
	[ "$SCAP" -ge 4096 ] && [ "$SCAP" -le "$FCAP" ] || fab_die "bad section_bytes"
	[ -n "$SLOW" ] || SLOW=$(((60000 + IV - 1) / IV))
}

fab_em() {
	printf '%s\n' "$1" 2>/dev/null || fab_gone
}

# Our output pipe is gone (the awk ended): leave; fab_main then ends the process group.
# Without the group (PGOK=0) stop the GPU reader ourselves (it stops nvidia-smi).
fab_gone() {
	[ "$PGOK" = 1 ] || { [ -n "$GP" ] && kill "$GP" 2>/dev/null; }
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

# A file to read: regular files only (a FIFO blocks already in open; a device is no
# attribute); [ -f ] follows symlinks, as the read will.
fab_regular() {
	[ -f "$1" ]
}

# An entry where a file to read should be that is something else (a FIFO, a device):
# never read, said once.
fab_odd() {
	case "$NL$SEEN$NL" in *"$NL-odd $1$NL"*) return 0 ;; esac
	SEEN="$SEEN$NL-odd $1"
	fab_em "W not a regular file, not read: $1"
}

# One file to read: "<code> <kind> <rel>" when it is a regular file ($4 is its path).
fab_one() {
	if fab_regular "$4"; then fab_em "$1 $2 $3"; elif fab_exists "$4"; then fab_odd "$3"; fi
}

# Every file of a glob, validated, sent as "<code> <kind> <rel>" (rel = $3/<file>);
# code n/s are markers (never read): any entry counts; the others must be regular files.
fab_files() {
	for _f in "$4"/*; do
		fab_exists "$_f" || continue
		_b=${_f##*/}
		fab_okname "$_b" 128 || { fab_refuse file "$3/$_b"; continue; }
		case $1 in
		n | s) fab_em "$1 $2 $3/$_b" ;;
		*) fab_one "$1" "$2" "$3/$_b" "$_f" ;;
		esac
	done
}

# An RDMA port's counter files: with a list ($1: ib_port_tick= for counters/ and
# counters_ext/, ib_hw_tick= for hw_counters/) those names every tick, the others on slow
# ticks (each read is a PMA query or a firmware command on real hardware); without it,
# every file every tick.
fab_split() {
	[ -n "$1" ] || { fab_files N sysib "$2" "$3"; return; }
	for _f in "$3"/*; do
		fab_exists "$_f" || continue
		_b=${_f##*/}
		fab_okname "$_b" 128 || { fab_refuse file "$2/$_b"; continue; }
		case ",$1," in *",$_b,"*) fab_one N sysib "$2/$_b" "$_f" ;; *) fab_one S sysib "$2/$_b" "$_f" ;; esac
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
			fab_one N sysnet "$n/$f" "$d/$f"
		done
		if fab_exists "$d/device"; then
			fab_em "n sysnet $n/device"
			for f in current_link_speed current_link_width max_link_speed max_link_width; do
				fab_one S sysnet "$n/device/$f" "$d/device/$f"
			done
			for h in "$d"/device/hwmon/hwmon*; do
				fab_regular "$h/name" || continue
				hb=${h##*/}
				fab_okname "$hb" 64 || continue
				fab_em "S sysnet $n/device/hwmon/$hb/name"
				for t in "$h"/temp*_input; do
					fab_regular "$t" || continue
					tb=${t##*/}
					fab_okname "$tb" 64 && fab_em "N sysnet $n/device/hwmon/$hb/$tb"
				done
			done
			fab_em "E $n"
			fab_em "O $n"
			# mlxlink's device: the netdev's PCI function (cd and PWD: builtins, no fork)
			if [ "$MLX" = 1 ] && cd -P "$d/device" 2>/dev/null; then
				case ${PWD##*/} in
				[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f].[0-7]) fab_em "P ${PWD##*/}" ;;
				esac
				cd / || :
			fi
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
		for f in fw_ver hca_type board_id node_guid node_type; do
			fab_one S sysib "$n/$f" "$d/$f"
		done
		for p in "$d"/ports/*; do
			fab_exists "$p" || continue
			pn=${p##*/}
			fab_okname "$pn" 16 || { fab_refuse port "$n/$pn"; continue; }
			for f in state phys_state rate link_layer lid sm_lid; do
				fab_one N sysib "$n/ports/$pn/$f" "$p/$f"
			done
			for c in counters counters_ext; do
				fab_split "$PTT" "$n/ports/$pn/$c" "$p/$c"
			done
			fab_split "$HWT" "$n/ports/$pn/hw_counters" "$p/hw_counters"
			fab_files S sysib "$n/ports/$pn/gid_attrs/ndevs" "$p/gid_attrs/ndevs"
			# The GID table (RoCE addressing), slow: the marker after the files says it
			# was read (see gid_keep in the awk).
			fab_files S sysib "$n/ports/$pn/gids" "$p/gids"
			fab_files S sysib "$n/ports/$pn/gid_attrs/types" "$p/gid_attrs/types"
			fab_exists "$p/gids" && fab_em "s sysib $n/ports/$pn/gids"
		done
		fab_files s sysib "$n/device/net" "$d/device/net"
	done
	fab_tb
	for c in "$SYS"/devices/system/cpu/cpu*/thermal_throttle; do
		fab_exists "$c" || continue
		cb=${c%/thermal_throttle}
		cb=${cb##*/}
		fab_okname "$cb" 16 || continue
		for f in core_throttle_count package_throttle_count; do
			fab_one C cputhrottle "devices/system/cpu/$cb/thermal_throttle/$f" "$c/$f"
		done
	done
}

# Thunderbolt (issue 14): bus/thunderbolt/devices at slow cadence. Host routers (<d>-0),
# devices and XDomains (<d>-<route>: another host) give their identity and link; a
# service (<xdomain>.<n>) its protocol key and the netdev on it (net/<name>, a marker).
# A switch's own "key" is its secure-connect secret: only services' keys are read.
# At most 64 entries: more is no small cluster.
fab_tb() {
	_tn=0
	for d in "$SYS"/bus/thunderbolt/devices/*; do
		fab_exists "$d" || continue
		n=${d##*/}
		fab_okname "$n" 64 || { fab_refuse thunderbolt "$n"; continue; }
		_tn=$((_tn + 1))
		[ "$_tn" -le 64 ] || { fab_em "W thunderbolt: more than 64 devices, the rest not read"; break; }
		fab_em "s systb $n"
		case $n in
		*.*) fab_one S systb "$n/key" "$d/key"; fab_files s systb "$n/net" "$d/net" ;;
		*)
			for f in unique_id generation device_name vendor_name authorized rx_speed tx_speed rx_lanes tx_lanes; do
				fab_one S systb "$n/$f" "$d/$f"
			done ;;
		esac
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
		# The keepalive carries the uptime: the awk's read deadlines need a clock.
		while [ "$rem" -gt 1000 ]; do
			sleep 1 2>/dev/null
			up=0
			read -r up _ </proc/uptime 2>/dev/null
			fab_em "K $up"
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

# fab_pgok (PGOK=1 when this shell leads its process group) is lifetime.sh's, which
# probe_script() puts in front of this file.

# End every process of the probe. With the group: TERM it (the caller ignores TERM),
# KILL what is left after 1 s (the caller too: a caller that wants to exit with a status
# runs this in the background). Without it: the awk (its sysfs readers end with it, its
# tools by their timeouts, and the ticker's next failed write stops the GPU reader) and
# the watcher.
fab_end() {
	trap '' TERM
	if [ "$PGOK" = 1 ]; then
		kill -TERM 0 2>/dev/null
		sleep 1 2>/dev/null
		kill -KILL 0 2>/dev/null
	else
		kill "$AP" "$WP" 2>/dev/null
	fi
}

# Reads the connection's stdin to EOF (fabtop sends nothing after the script), then
# ends everything: a blocked probe never writes, so a failed write cannot tell it that
# the channel or fabtop went away; this does, within a second of the EOF.
fab_watch() {
	while IFS= read -r _l; do :; done
	fab_end
}

# The fast probe (collectors/probe_fast.py, carried in FAB_PY): unless probe=sh, the
# first python3 of 3.6 or newer (RHEL 8: /usr/libexec/platform-python) replaces this
# shell, with the connection's stdin, the same pid (so the same process group) and the
# same arguments. The source goes in the environment, not the command line, and the
# fast probe takes it out before it starts anything.
fab_python() {
	[ "$PROBE" = sh ] && return 0
	for _p in python3 /usr/libexec/platform-python; do
		command -v "$_p" >/dev/null 2>&1 || continue
		"$_p" -c 'import sys; sys.exit(sys.version_info < (3, 6))' </dev/null >/dev/null 2>&1 || continue
		export FAB_PY
		exec "$_p" -c 'import os; s = os.environ.pop("FAB_PY"); exec(compile(s, "fabtop-probe", "exec"), {"__name__": "__fabtop_probe__"})' "$@" <&3 3<&-
	done
	[ "$PROBE" = python ] && fab_die "probe=python: no python3 of 3.6 or newer on this node"
	return 0
}

# macOS (issue 14): /bin/sh is bash 3.2, awk is BWK awk, no timeout, no /proc, and
# python3 may be a stub that offers to install the developer tools: on Darwin the zsh
# probe (collectors/probe_darwin.zsh, carried in FAB_ZSH like the fast probe) replaces
# this shell, with the connection's stdin, the same pid and the same arguments.
fab_darwin() {
	case $(uname -s 2>/dev/null) in Darwin) ;; *) return 0 ;; esac
	command -v zsh >/dev/null 2>&1 || fab_die "Darwin without zsh"
	export FAB_ZSH
	exec zsh -f -c 'eval "$FAB_ZSH"' fabtop-probe "$@" <&3 3<&-
}

fab_main() {
	# fd 3 keeps the connection's stdin for the watcher; nothing else reads it.
	exec 3<&0 </dev/null
	[ -n "$FAB_PY" ] && [ -n "$FAB_ZSH" ] && [ -n "$FAB_AWK" ] ||
		fab_die "probe.sh alone: send the script collectors/probe.py probe_script() builds"
	fab_args "$@"
	fab_pgok
	[ -n "$XPATH" ] && PATH=$XPATH:$PATH
	export PATH
	fab_darwin "$@"
	fab_python "$@"
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
	for t in ethtool mlnx_qos dcb nvidia-smi amd-smi rocm-smi uname dpkg-query rpm ofed_info ip devlink mlxlink; do
		command -v "$t" >/dev/null 2>&1 && HAVE="$HAVE $t"
	done
	HAVE="$HAVE "
	# The FEC sections say which ethtool printed them (its histogram lines need a recent
	# one): asked once per run, digits and dots only.
	ETHV=
	case $HAVE in *" ethtool "*)
		if [ -n "$TK" ]; then ETHV=$($TK 2 ethtool --version 2>/dev/null </dev/null)
		else ETHV=$(ethtool --version 2>/dev/null </dev/null); fi
		ETHV=${ETHV#ethtool version }
		case $ETHV in '' | *[!0-9.]*) ETHV= ;; esac
		[ "${#ETHV}" -le 16 ] || ETHV= ;;
	esac
	# The packet filter (slow cadence): nft's JSON, else iptables-save. Reading it needs
	# root (CAP_NET_ADMIN): without it the section says so instead of a tool's error.
	FW= FWR=0
	for t in nft iptables-save; do
		command -v "$t" >/dev/null 2>&1 && { FW=$t; break; }
	done
	[ "$(id -u 2>/dev/null)" = 0 ] && FWR=1
	# Module EEPROMs (ethtool -m) need CAP_NET_ADMIN alike: OMR as FWR.
	OMR=$FWR
	[ "$FWS" = 1 ] && [ "$FWR" = 0 ] && FWR=2
	[ "$OMS" = 1 ] && [ "$OMR" = 0 ] && OMR=2
	# mlxlink needs root too (through sudo -n with optics_sudo); 0: not asked for
	MLXR=0
	[ "$MLX" = 1 ] && MLXR=$OMR
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
	fab_producers 3<&- | awk $AWKI -v IV="$IV" -v SYS="$SYS" -v TK="$TK" -v TO="$TO" \
		-v HAVE="$HAVE" -v GKIND="$GKIND" -v GF="$GF" -v MAXF="$MAXF" -v SLOW="$SLOW" \
		-v SCAP="$SCAP" -v FCAP="$FCAP" -v FW="$FW" -v FWR="$FWR" -v OMR="$OMR" -v MLX="$MLX" -v MLXR="$MLXR" -v RUN="$$" -v OPTS="$OPTS" -v ETHV="$ETHV" "$FAB_AWK" 3<&- &
	AP=$!
	fab_watch <&3 3<&- >/dev/null 2>&1 &
	WP=$!
	exec 3<&-
	wait "$AP"
	rc=$?
	trap '' TERM
	if [ "$PGOK" = 1 ]; then
		(fab_end) </dev/null >/dev/null 2>&1 &
	else
		fab_end
	fi
	exit "$rc"
}

# The script arrives on stdin, and stdin stays open after it (the watcher's EOF ends the
# probe). The shell reads a script line by line as it runs it, so everything runs from
# this one last line: once the shell executes it, nothing of the script is left unread
# for the watcher, and `exit` on the same line means the shell never reads stdin again.
fab_main "$@"; exit
