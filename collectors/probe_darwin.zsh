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
	sysfs=/[A-Za-z0-9_./-]# | gpu_fields=[A-Za-z0-9_.,]# | gpu_fallback=[A-Za-z0-9_.,]# | probe=(auto|python|sh) | ib_hw_tick=[A-Za-z0-9_,-]#) ;;
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
[[ $(ps -o pgid= -p $$ 2>/dev/null) == *[[:space:]]#$$ ]] && PGOK=1

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

# Run "$@" with stdin from /dev/null, stderr into stdout, killed after $1 centiseconds
# (TERM, KILL 1 s later). Prints the output, then "<nonce> rc <status>".
fab_bounded() {
	local cs=$1; shift
	"$@" </dev/null 2>&1 &
	local p=$!
	{ zselect -t $cs; kill -TERM $p; zselect -t 100; kill -KILL $p } </dev/null >/dev/null 2>&1 &
	local w=$!
	wait $p
	local rc=$?
	kill $w 2>/dev/null
	print -r -- "$NONCE rc $rc"
}

# A section's lines into the frame buffer FB, within the section and frame caps.
# $1 kind $2 subject $3 read_ns $4 status $5 detail, $6 the text.
fab_section() {
	local kind=$1 subj=$2 rns=$3 st=$4 det=$5 text=$6 l out= trunc=
	integer sb=0 n
	for l in "${(@ps:\n:)text}"; do
		(( ${#l} > 65536 )) && l=${l[1,65536]}
		[[ $l == @@* ]] && l=@$l
		n=$(( ${#l} + 1 ))
		if (( sb + n > SCAP )); then trunc="section cap $SCAP bytes"; break; fi
		if (( FBN + sb + n > FCAP )); then trunc="frame cap $FCAP bytes"; break; fi
		out+=$l$'\n'
		sb+=n
	done
	if [[ -n $trunc ]]; then
		det=$trunc${${st:#ok}:+; $st${det:+ $det}}
		st=truncated
	fi
	FB+="@@section $kind $subj $rns $st${det:+ $det}"$'\n'$out
	FBN+=sb
}

# One tool's section from fab_bounded's output: status from the exit code.
fab_tool_section() {
	local kind=$1 out=$2 rns=$3 rc st det=
	rc=${${out##*$NONCE rc }%%$'\n'*}
	out=${out%$NONCE rc *}
	out=${out%$'\n'}
	case $rc in
	0) st=ok ;;
	143|137) st=timeout det="after ${DTO}s" ;;
	127) st=missing det=$kind ;;
	*) st=error det="rc=$rc" ;;
	esac
	fab_section $kind - $rns $st "$det" "$out"
}

# Slow worker (a coprocess): runs the slow tools one after another, each bounded, and
# prints every section as "S <kind> <read_ns> <rc>", its lines each prefixed "L ",
# then "E" once all are done.
fab_slow_worker() {
	local kind cmd out l
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
			print -r -- "S $kind $NOW 127"
			continue
		fi
		out=$(fab_bounded $((DTO * 100)) ${=cmd})
		print -r -- "S $kind $NOW ${${out##*$NONCE rc }%%$'\n'*}"
		out=${out%$NONCE rc *}
		for l in "${(@ps:\n:)${out%$'\n'}}"; do
			(( ${#l} > 65536 )) && l=${l[1,65536]}
			print -r -- "L $l"
		done
	done
	print E
}

# Drain what the slow worker has written so far (never blocks): lines into SLOWBUF; on
# "E" the finished set becomes SLOWDONE (a list of kind/read_ns/rc/text).
fab_slow_drain() {
	local line
	while read -r -t 0 -u $SWFD line 2>/dev/null; do
		case $line in
		'S '*) SW_K+=(${${line#S }%% *}); SW_T+=("") ; SW_M+=(${line#S * }) ;;
		'L '*) (( $#SW_T )) && SW_T[-1]+=${line#L }$'\n' ;;
		E) SLOWDONE=1; break ;;
		esac
	done
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
trap 'fab_end; exit 0' PIPE
trap 'exit 0' TERM

if [[ -n $HAVE_MACMON ]]; then
	coproc macmon pipe -i $IV 2>/dev/null
	MMPID=$!
	exec {MMFD}<&p
	coproc exit
fi

integer seq=0 left=0 slowrun=0 FBN
typeset -a SW_K SW_T SW_M
SLOWDONE=0
dl=0
while :; do
	# A slow tick starts the worker (unless the last one is still running).
	if (( left <= 0 )) && (( ! slowrun )); then
		SW_K=() SW_T=() SW_M=() SLOWDONE=0
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
	out=$(fab_bounded $TOCS netstat -ibdn)
	if [[ -n $IFACES ]]; then
		filtered=
		for l in "${(@f)out}"; do
			n=${${l%% *}%\*}
			if [[ $l == Name* || $l == $NONCE* || ,$IFACES, == *,$n,* ]]; then filtered+=$l$'\n'; fi
		done
		out=${filtered%$'\n'}
	fi
	fab_tool_section netstat_i "$out" $CNS
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
				rc=${SW_M[i]#* } rns=${SW_M[i]%% *}
				fab_tool_section ${SW_K[i]} "${SW_T[i]%$'\n'}"$'\n'"$NONCE rc $rc" $rns
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
	print -rn -- "$FB" || { fab_end; exit 0 }
	(( MAXF > 0 && seq >= MAXF )) && { fab_end; exit 0 }
	# Sleep to the next tick in slices of at most 1 s, writing an empty keepalive line
	# after each, so a closed channel is noticed within a second.
	fab_now
	integer ivns=$(( IV * 1000000 ))
	(( dl = dl + ivns ))
	integer rem=$(( (dl - NOW) / 1000000 ))
	if (( rem <= 0 || rem > IV )); then dl=$(( NOW + ivns )); rem=$IV; fi
	while (( rem > 1000 )); do
		zselect -t 100
		print -r -- "" || { fab_end; exit 0 }
		(( rem -= 1000 ))
	done
	zselect -t $(( (rem + 9) / 10 ))
done
