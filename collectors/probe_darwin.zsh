# fabtop probe, macOS path: zsh (on every Mac), carried in FAB_ZSH by probe.sh and run
# with `exec zsh -f -c 'eval "$FAB_ZSH"'` when `uname -s` says Darwin (see probe.sh,
# fab_darwin). It prints the frames of docs/PROBE.md (collectors/frames.py), like the sh
# probe: @@fabtop-frame <seq> <clock_ns> <uptime_s> <unix_s>, @@section kind subject
# read_ns status [detail], the tool's output unchanged (a line starting "@@" gets one
# more "@"), @@end <seq>. Nothing is written on the node, no temp file, no FIFO.
#
# Why zsh and not the sh probe: macOS /bin/sh is bash 3.2, awk is BWK awk, there is no
# timeout(1), no /proc, and `date +%s%N` prints a literal N; python3 may be a stub that
# offers to install the developer tools. zsh has what the probe needs built in:
# $EPOCHREALTIME (zsh/datetime) for the remote clock, zselect (zsh/zselect) for sleeps
# and time bounds without a fork, coprocesses to run slow tools off the tick path.
#
# Per tick: `netstat -ibdn` (all interfaces, one fork; no root) and, where macmon
# exists, its latest `macmon pipe` line (a persistent coprocess). Uptime (the clock that
# never steps, DESIGN §2): now - `sysctl -n kern.boottime` (the kernel moves boottime
# when the wall clock is set, so the difference does not step).
# Slow ticks: a worker coprocess runs ibv_devinfo -v, rdma_ctl status, system_profiler
# SPThunderboltDataType -json, networksetup -listallhardwareports, ifconfig, and
# pmset -g therm (the thermal pressure without root, where macmon is absent), each
# bounded in time (background + zselect + kill) and in bytes; the sections it finished
# go into the next frame.
# Lifetime: a watcher reads the connection's stdin to EOF and then ends the probe's
# process group (TERM, then KILL), as the sh probe does.

emulate -R zsh
setopt extended_glob no_nomatch no_bg_nice no_monitor no_notify pipe_fail 2>/dev/null
export LC_ALL=C
zmodload zsh/datetime || { print -u2 'fabtop-probe: zsh/datetime missing'; exit 2 }
zmodload zsh/zselect || { print -u2 'fabtop-probe: zsh/zselect missing'; exit 2 }
unset FAB_ZSH FAB_PY

fab_die() { print -ru2 -- "fabtop-probe: $1"; exit 2 }

# The same arguments as the sh probe (which checked them already); the ones for Linux
# sources are accepted and not used.
IV=1000 XPATH= IFACES= SLOW= TO=2 MAXF=0 SCAP=8388608 FCAP=15728640 GPU=auto
for a in "$@"; do
	v=${a#*=}
	case $a in
	interval_ms=<100-60000>) IV=$v ;;
	path=*) [[ $v == (|/[A-Za-z0-9_./-]#)(|(:/[A-Za-z0-9_./-]#)#) ]] || fab_die "bad path"; XPATH=$v ;;
	ifaces=*) [[ $v == [A-Za-z0-9_.:@][A-Za-z0-9_.:@-]#(,[A-Za-z0-9_.:@][A-Za-z0-9_.:@-]#)# ]] || fab_die "bad ifaces"; IFACES=$v ;;
	slow_ticks=<1-100000>) SLOW=$v ;;
	timeout_s=[0-9]##(|.[0-9]##)) TO=$v ;;
	max_frames=<0-999999999>) MAXF=$v ;;
	section_bytes=<4096-16711680>) SCAP=$v ;;
	frame_bytes=<65536-16711680>) FCAP=$v ;;
	gpu=(auto|off)) GPU=$v ;;
	sysfs=/[A-Za-z0-9_./-]# | gpu_fields=[A-Za-z0-9_.,]# | gpu_fallback=[A-Za-z0-9_.,]# | probe=(auto|python|sh) | ib_(hw|port)_tick=[A-Za-z0-9_,-]#) ;;
	storm_pause_ratio=[0-9.]## | storm_flat_fraction=[0-9.]## | storm_flat_bytes_per_s=[0-9.]## | fw_sudo=(0|1) | optics_sudo=(0|1) | mlxlink=(0|1)) ;;
	*) fab_die "unknown argument" ;;
	esac
done
(( SCAP <= FCAP )) || fab_die "bad section_bytes"
[[ -n $SLOW ]] || SLOW=$(( (60000 + IV - 1) / IV ))
[[ -n $XPATH ]] && PATH=$XPATH:$PATH
export PATH
# Slow tools run off the tick path; each gets this long (system_profiler takes about a
# second on a Mac Studio: its own _SPCompletionInterval in public captures).
integer DTO=$(( ${TO%.*} > 10 ? ${TO%.*} : 10 ))
integer TOCS=$(( TO * 100 ))
(( TOCS > 0 )) || TOCS=100

# Whether we lead our process group: only then is `kill 0` ours alone.
PGOK=0
[[ ${$(ps -o pgid= -p $$ 2>/dev/null)//[[:space:]]/} == $$ ]] && PGOK=1

fab_end() {
	trap '' TERM
	if (( PGOK )); then
		kill -TERM 0 2>/dev/null
		zselect -t 100
		kill -KILL 0 2>/dev/null
	else
		[[ -n $MMPID ]] && kill $MMPID 2>/dev/null
		[[ -n $SWPID ]] && kill $SWPID 2>/dev/null
		[[ -n $WPID ]] && kill $WPID 2>/dev/null
	fi
}

# Nanoseconds of the wall clock, from $EPOCHREALTIME (seconds with a fraction).
fab_now() {
	local t=$EPOCHREALTIME
	local s=${t%.*} f=${t#*.}000000000
	NOW=$s${f[1,9]}
}

# Seconds since boot: now - kern.boottime ("{ sec = 1700000000, usec = 123456 } ...").
fab_uptime() {
	local bt s u
	bt=$(sysctl -n kern.boottime 2>/dev/null)
	s=${${bt#*sec = }%%,*} u=${${bt#*usec = }%% *}
	if [[ $s == <-> && $u == <-> && ${#s} -le 12 ]]; then
		local t=$EPOCHREALTIME
		UP=$(( ${t%.*} - s ))
		local us=$(( 1${t#*.}000000 )) ; us=${us[2,7]}
		integer d=$(( 10#$us - u ))
		if (( d < 0 )); then UP=$(( UP - 1 )); d=$(( d + 1000000 )); fi
		UP=$UP.${(l:6::0:)d}
	else
		UP=0
	fi
}

# Run "$3..." with stdin from /dev/null, stderr into stdout, killed after $1 centiseconds
# (TERM, KILL 1 s later), its output cut after $2 bytes (head closes the pipe: the tool
# then dies on SIGPIPE). Prints the output, then "<nonce> rc <status>" unless cut.
fab_bounded() {
	local cs=$1 limit=$2; shift 2
	{
		"$@" </dev/null 2>&1 &
		local p=$!
		{ zselect -t $cs; kill -TERM $p; zselect -t 100; kill -KILL $p } </dev/null >/dev/null 2>&1 &
		local w=$!
		wait $p
		local rc=$?
		kill $w 2>/dev/null
		print -r -- "$NONCE rc $rc"
	} | head -c $limit
}

# A section into the frame buffer FB, within the section and frame caps: whole lines
# only, a line over 64 KiB cut, a content line starting "@@" sent with one more "@".
# $1 kind $2 subject $3 read_ns $4 status $5 detail, $6 the text, $7 "cut" when the
# text was cut at the section cap already.
fab_section() {
	local kind=$1 subj=$2 rns=$3 st=$4 det=$5 text=$6 trunc= l
	local -a lines
	integer budget used=0 k=0
	[[ $7 == cut ]] && trunc="section cap $SCAP bytes"
	if [[ -n $text ]]; then
		lines=("${(@ps:\n:)text}")
		lines=("${(@)lines//(#b)(?(#c65536))?*/${match[1]}}")
		lines=("${(@)lines/#@@/@@@}")
		text=${(pj:\n:)lines}$'\n'
		# Whole lines within the caps (zsh's pattern trims are quadratic on long strings:
		# count lines instead).
		if (( ${#text} > SCAP || FBN + ${#text} > FCAP )); then
			budget=$(( SCAP < FCAP - FBN ? SCAP : FCAP - FBN ))
			trunc="section cap $SCAP bytes"
			(( SCAP < FCAP - FBN )) || trunc="frame cap $FCAP bytes"
			for l in "${lines[@]}"; do
				(( used + ${#l} + 1 > budget )) && break
				used+=$(( ${#l} + 1 ))
				k+=1
			done
			text=
			(( k > 0 )) && text=${(pj:\n:)${lines[1,k]}}$'\n'
		fi
	fi
	if [[ -n $trunc ]]; then
		det=$trunc${${st:#ok}:+; $st${det:+ $det}}
		st=truncated
	fi
	FB+="@@section $kind $subj $rns $st${det:+ $det}"$'\n'$text
	FBN+=${#text}
}

# One tool's section from fab_bounded's output: status from the exit code.
# $1 kind, $2 output, $3 read_ns, $4 the time bound in seconds.
fab_tool_section() {
	local kind=$1 out=$2 rns=$3 rc= st det= cut=
	if [[ $out == *$NONCE\ rc\ * ]]; then
		rc=${${out##*$NONCE rc }%%$'\n'*}
		out=${out%$NONCE rc *}
	else
		cut=cut
	fi
	out=${out%$'\n'}
	case $rc in
	0) st=ok ;;
	143|137) st=timeout det="after ${4}s" ;;
	127) st=missing det=${kind} ;;
	'') st=ok ;;
	*) st=error det="rc=$rc" ;;
	esac
	fab_section $kind - $rns $st "$det" "$out" $cut
}

# Slow worker (a coprocess): runs the slow tools one after another, each bounded in
# time (DTO) and bytes (SCAP), and sends each as "S <kind> <read_ns> <len>" followed by
# <len> bytes of fab_bounded's output; then "E" once all are done.
fab_slow_worker() {
	local kind cmd out
	for kind cmd in \
		ibv_devinfo 'ibv_devinfo -v' \
		rdma_ctl 'rdma_ctl status' \
		sp_thunderbolt 'system_profiler SPThunderboltDataType -json' \
		hwports 'networksetup -listallhardwareports' \
		ifconfig 'ifconfig' \
		pmset_therm 'pmset -g therm'; do
		[[ $kind == pmset_therm && -n $HAVE_MACMON ]] && continue
		fab_now
		if ! whence -p ${cmd%% *} >/dev/null 2>&1; then
			out="$NONCE rc 127"
		else
			out=$(fab_bounded $((DTO * 100)) $((SCAP + 1)) ${=cmd})
		fi
		print -r -- "S $kind $NOW ${#out}"
		print -rn -- "$out"
	done
	print E
}

# Take what the slow worker has written so far, without waiting for more than it is
# already writing: each "S" header is followed by its bytes (read with a time bound);
# on "E" the set is done (SLOWDONE).
fab_slow_drain() {
	local line data
	while read -r -t 0 -u $SWFD line 2>/dev/null; do
		case $line in
		'S '*)
			local -a w=(${=line})
			data=
			if (( w[4] > 0 )) && ! read -r -t 5 -k $w[4] -u $SWFD data 2>/dev/null; then
				data=
			fi
			SW_K+=($w[2]) SW_N+=($w[3]) SW_T+=("$data") ;;
		E) SLOWDONE=1; break ;;
		esac
	done
}

# The probe's own end (max_frames, a failed write): leave with status 0 and let a
# background copy of fab_end stop the rest (it would stop us too: TERM is ignored here).
fab_leave() {
	trap '' TERM PIPE
	if (( PGOK )); then
		( fab_end ) </dev/null >/dev/null 2>&1 &!
	else
		fab_end
	fi
	exit 0
}

fab_watch() {
	while IFS= read -r _l; do :; done
	fab_end
}

NONCE="@@fabtop-$RANDOM$RANDOM-$$"
HAVE_MACMON=
[[ $GPU == auto ]] && whence -p macmon >/dev/null 2>&1 && HAVE_MACMON=1
MMPID= SWPID= WPID= MMFD= SWFD= MMLINE=

# The watcher keeps the connection's stdin; everything else reads /dev/null.
exec 3<&0 </dev/null
fab_watch <&3 3<&- >/dev/null 2>&1 &
WPID=$!
exec 3<&-
trap fab_leave PIPE
trap 'exit 0' TERM

if [[ -n $HAVE_MACMON ]]; then
	coproc macmon pipe -i $IV 2>/dev/null
	MMPID=$!
	exec {MMFD}<&p
	coproc exit
fi

integer seq=0 left=0 slowrun=0 FBN
typeset -a SW_K SW_T SW_N
SLOWDONE=0
dl=0
while :; do
	# A slow tick starts the worker (unless the last one is still running).
	if (( left <= 0 )) && (( ! slowrun )); then
		SW_K=() SW_T=() SW_N=() SLOWDONE=0
		coproc fab_slow_worker
		SWPID=$!
		exec {SWFD}<&p
		coproc exit
		slowrun=1 left=$SLOW
	fi
	(( left-- ))
	fab_now
	fab_uptime
	seq+=1
	CNS=$NOW
	FB="@@fabtop-frame $seq $CNS $UP ${CNS[1,-10]}.${CNS[-9,-7]}"$'\n' FBN=0
	out=$(fab_bounded $TOCS $((SCAP + 1)) netstat -ibdn)
	if [[ -n $IFACES ]]; then
		filtered=
		for l in "${(@f)out}"; do
			n=${${l%% *}%\*}
			if [[ $l == Name* || $l == $NONCE* || ,$IFACES, == *,$n,* ]]; then filtered+=$l$'\n'; fi
		done
		out=${filtered%$'\n'}
	fi
	fab_tool_section netstat_i "$out" $CNS $TO
	if [[ -n $HAVE_MACMON ]]; then
		while read -r -t 0 -u $MMFD l 2>/dev/null; do
			[[ $l == \{* ]] && (( ${#l} <= 65536 )) && MMLINE=$l
		done
		if [[ -n $MMLINE ]]; then
			fab_section macmon - $CNS ok "" "$MMLINE"
		else
			fab_section macmon - $CNS stale "no line yet" ""
		fi
	fi
	if (( slowrun )); then
		fab_slow_drain
		if (( SLOWDONE )); then
			for i in {1..$#SW_K}; do
				fab_tool_section ${SW_K[i]} "${SW_T[i]}" ${SW_N[i]} $DTO
			done
			exec {SWFD}<&-
			slowrun=0 SLOWDONE=0
			FSLOW=1
		else
			FSLOW=0
		fi
	else
		FSLOW=0
	fi
	FB+="@@section probe - $CNS ok"$'\n'"impl zsh-darwin ${ZSH_VERSION}"$'\n'"interval_ms $IV"$'\n'"slow $FSLOW"$'\n'"@@end $seq"$'\n'
	print -rn -- "$FB" || fab_leave
	(( MAXF > 0 && seq >= MAXF )) && fab_leave
	# Sleep to the next tick in slices of at most 1 s, writing an empty keepalive line
	# after each, so a closed channel is noticed within a second.
	fab_now
	integer ivns=$(( IV * 1000000 ))
	(( dl = dl + ivns ))
	integer rem=$(( (dl - NOW) / 1000000 ))
	if (( rem <= 0 || rem > IV )); then dl=$(( NOW + ivns )); rem=$IV; fi
	while (( rem > 1000 )); do
		zselect -t 100
		print -r -- "" || fab_leave
		(( rem -= 1000 ))
	done
	zselect -t $(( (rem + 9) / 10 ))
done
