# What fabtop's scripts on a node share (probe.sh, launch.sh; collectors/probe.py and
# collectors/launch.py put this file in front of each): POSIX sh, functions only.

# PGOK=1 when this shell leads its process group (sshd runs the command in a new
# session and `exec sh` keeps that; LocalTransport uses a new session too): only then
# is `kill 0` ours alone.
fab_pgok() {
	PGOK=0
	if read -r _s </proc/$$/stat 2>/dev/null; then
		_s=${_s##*") "}
	else
		_s=". . $(ps -o pgid= -p $$ 2>/dev/null)"
	fi
	set -- $_s
	[ "$3" = "$$" ] && PGOK=1
}
