# fabtop probe: the awk of the POSIX sh probe (collectors/probe.sh), which runs it as
#   producers | awk [-W interactive] -v IV=... "$FAB_AWK"
# It reads the producers' lines on stdin and writes frames (docs/PROBE.md) on stdout.
# This file is never written on the node: collectors/probe.py probe_script() puts its
# text, single-quoted, on probe.sh's `FAB_AWK=` line, and the awk gets it as its program
# argument. Portable awk only: it runs under mawk, gawk, busybox awk and original-awk
# (tests/unit/test_probe_args.py parses it with each; `gawk --posix --lint -f` lints it).
#
# Variables (-v, from fab_main): IV tick interval (ms), SYS sysfs root, TK the timeout
# command ("" without one), TO per-section timeout (s), HAVE " tool tool ... " found on
# PATH, GKIND nvidia|amd-smi|rocm-smi|none|off, GF nvidia-smi query fields, MAXF frames
# before exit (0: no end), SCAP and FCAP byte caps per section and per frame, FW the
# packet filter tool (nft, iptables-save or ""), FWR 1 as root, 2 through sudo -n, 0 not;
# OMR the same for module EEPROMs (ethtool -m); MLX 1 when mlxlink is asked for, MLXR
# 1 as root, 2 through sudo -n, 0 not (mlxlink needs root as ethtool -m does);
# SLOW is passed but not read (each T line says whether its tick is slow); OPTS least
# seconds between optics rounds, ETHV the node's ethtool version ("" unknown).
# Input lines: see the rules at the end of this file and probe.sh's "Structure".
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
# Byte caps: a section is built in SL and written by sl_emit. The line that would take
# it past SCAP bytes, or the frame past FCAP (frames.py drops a frame over 16 MiB), is
# dropped with every line after it, and the section says `truncated` with the cap in
# its detail (the status it would have had follows): the rest of the frame ships.
function sl_reset() { SLN = 0; SLB = 0; SLT = "" }
function sl_add(l,   n) {
	if (SLT != "") return 0
	l = esc(l)
	n = length(l) + 1
	if (SLB + n > SCAP) { SLT = "section cap " SCAP " bytes"; return 0 }
	if (FB + SLB + n > FCAP) { SLT = "frame cap " FCAP " bytes"; return 0 }
	SL[++SLN] = l
	SLB += n
	return 1
}
function sl_emit(kind, subj, rns, st, det,   i) {
	if (SLT != "") {
		det = SLT (st == "ok" ? "" : "; " st (det == "" ? "" : " " det))
		st = "truncated"
	}
	section(kind, subj, rns, st, det)
	for (i = 1; i <= SLN; i++) o(SL[i])
	if (kind != "gpu_nvidia" && kind != "gpu_amd") gen_see(kind SUBSEP subj, SLN, SL, kind == "sysnet" || kind == "sysib")
	FB += SLB
	split("", SL)
	sl_reset()
}
# docs/PROBE.md "Generation" (probe_fast.py Generation, the same rule): the `gen` line of
# the probe section moves when a section's text differs from what was last sent under
# its kind and subject; GPU sections and the probe's per-tick lines move nothing, nor the
# value of a NIC temperature line that the collector reads every tick (temp_less).
function gen_see(key, n, L, sysfs,   i, l, moved) {
	GENS[key] = 1
	moved = !(key in GENN) || GENN[key] != n
	for (i = 1; i <= n; i++) {
		l = sysfs && index(L[i], "/hwmon/") ? temp_less(L[i]) : L[i]
		if (!moved && GENL[key, i] != l) moved = 1
		GENL[key, i] = l
	}
	for (i = n + 1; i <= GENN[key]; i++) delete GENL[key, i]
	GENN[key] = n
	if (moved) GENM = 1
}
# <owner>/device/hwmon/<hwmonN>/temp<1-4 digits>_input <1-9 digits>, names of 1-64
# printable characters: the line without its value (collectors/layout.py _HWMON_LINE).
function temp_less(l,   p) {
	if (split(l, p, "/") != 5 || p[2] != "device" || p[3] != "hwmon") return l
	if (length(p[1]) > 64 || length(p[4]) > 64 || p[1] !~ /^[!-~]+$/ || p[4] !~ /^[!-~]+$/) return l
	if (p[5] !~ /^temp[0-9][0-9]?[0-9]?[0-9]?_input [0-9][0-9]?[0-9]?[0-9]?[0-9]?[0-9]?[0-9]?[0-9]?[0-9]?$/) return l
	return substr(l, 1, index(l, " ") - 1)
}
function gen_line(   k, i, j, n) {
	n = 0
	PN[++n] = "impl sh"
	for (i = 1; i <= nw; i++) PN[++n] = esc("warning " W[i])
	gen_see("probe" SUBSEP "-", n, PN, 0)
	split("", PN)
	if (GENM) { GEN++; GENM = 0 }
	if (FSLOW) {  # forget what no frame sent since the last slow one (a netdev gone)
		n = 0
		for (k in GENN) if (!(k in GENS)) PN[++n] = k
		for (i = 1; i <= n; i++) {
			for (j = 1; j <= GENN[PN[i]]; j++) delete GENL[PN[i], j]
			delete GENN[PN[i]]
		}
		split("", PN)
		split("", GENS)
	}
	return "gen " RUN "." GEN
}
# Fallback when no reader can run (see rd_cmd): one grep per tick reads every listed
# file, without a time bound. mawk aborts on a read error (EINVAL from `speed` on a down
# link, EIO from a PMA counter), grep -s skips the file and goes on.
function read_files(slow,   i, ch, n) {
	n = 0; ch = ""
	for (i = 1; i <= nf; i++) {
		if (FM[i] == "n" || FM[i] == "s" || (FM[i] == "S" && !slow) || (FP[i] in SKIP)) continue
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
		if ((p in VAL) || c >= length(l)) continue
		if (length(l) - c > 2048) left_out(p)
		else VAL[p] = substr(l, c + 1)
	}
	close(cmd)
}
# Sysfs readers. A read that blocks (a FIFO, a wedged driver attribute; mlx5 hw_counters
# go to firmware) must cost one value, never the frame, and a read stuck in the kernel
# ignores signals: so no read happens in this awk, which never waits on a reader. Each
# reader is a persistent sh loop (builtins only: no fork per tick or per file) for about
# 60 KB of the file list (one sh -c word may hold 128 KB). It is started with print|cmd,
# and the popen shell forks it into the background and exits, so neither close() nor our
# exit ever waits for it. It writes into our own input, the pipe from the ticker, which
# it opens as /proc/<awk pid>/fd/0 (Linux): one line per file read, "V <rid> <i>
# <value>" (value empty when unreadable, whole lines of at most 2 KiB so pipe writes
# stay atomic beside the ticker and GPU lines), then "D <rid>". Each tick we write
# "<slow>" to every idle reader and write the frame once every one said D, or when TO
# seconds have passed (the ticker and keepalive lines carry the clock). A reader that
# has run TO seconds and said nothing for a whole ticker period is stuck in the file
# after its last line: that file is skipped from then on and said in a warning, the
# reader abandoned and the readers rebuilt. We never write to a reader that may be gone
# (a write to a pipe without reader would kill us): only to one that just said D, or a
# new one, which turns into a sink when it cannot open our input.
function rd_cmd(rid, fast, slow) {
	return "exec 2>/dev/null 3<&0; { if [ -w /proc/$PPID/fd/0 ] && command exec >/proc/$PPID/fd/0 && cd " SYS "; then" \
		" r() { for f; do i=$((i + 1)); v=; IFS= read -r v <\"$f\"; if [ ${#v} -le 2048 ]; then printf \"V " rid " %s %s\\n\" \"$i\" \"$v\"; else printf \"L " rid " %s\\n\" \"$i\"; fi; done; };" \
		" echo \"V " rid " 0\"; while read -r s; do i=0; r" fast "; [ \"$s\" = 1 ] && r" slow "; echo \"D " rid "\"; done;" \
		" else while read -r s; do :; done; fi; } <&3 3<&- &"
}
function rd_add(p, slow) {
	if ((p in SKIP) || p !~ /^[A-Za-z0-9_.:@\/-]+$/) return
	if (NCH == 0 || length(CF[NCH]) + length(CS[NCH]) > 60000) {
		NCH++; CF[NCH] = ""; CS[NCH] = ""; CNF[NCH] = 0; CNSL[NCH] = 0; CR[NCH] = 0
	}
	if (slow) { CES[NCH, ++CNSL[NCH]] = p; CS[NCH] = CS[NCH] " " p }
	else { CEF[NCH, ++CNF[NCH]] = p; CF[NCH] = CF[NCH] " " p }
}
function rd_drop(   c, r) {
	for (c = 1; c <= NCH; c++) {
		r = CR[c]
		if (r) { close(RCM[r]); RST[r] = 0 }
	}
	NCH = 0
	split("", CF); split("", CS); split("", CEF); split("", CES); split("", CNF); split("", CNSL); split("", CR)
}
function rd_build(   i) {
	rd_drop()
	RDIRTY = 0
	for (i = 1; i <= nf; i++) if (FM[i] == "N" || FM[i] == "S") rd_add(FP[i], FM[i] == "S")
	for (i = 1; i <= nc; i++) rd_add(CP[i], 1)
}
# The file reader r is in, or was in when it stopped: the one after its last line.
function rd_file(r,   c, i) {
	c = RCH[r]; i = RL[r] + 1
	if (i <= CNF[c]) return CEF[c, i]
	if (RSL[r] && i - CNF[c] <= CNSL[c]) return CES[c, i - CNF[c]]
	return ""
}
function rd_go(slow,   c, r) {
	PW = 0
	if (RDIRTY) rd_build()
	for (c = 1; c <= NCH; c++) {
		r = CR[c]
		if (r == 0) {
			r = CR[c] = ++NRD
			RCM[r] = rd_cmd(r, CF[c], CS[c]); RCH[r] = c; RST[r] = 1; RH[r] = 0
		}
		if (RST[r] != 1) continue  # still busy with an earlier tick: its values are missing
		printf "%d\n", slow | RCM[r]
		fflush(RCM[r])
		RST[r] = 2; RTK[r] = seq; RG[r] = LUP; RM[r] = 0; RL[r] = 0; RSL[r] = slow
		PW++
	}
}
function rd_line(l,   r, i, v, h) {
	r = $2 + 0; i = $3 + 0
	if (!(r in RST) || RST[r] != 2) return
	RM[r] = 1
	if (i == 0) { RH[r] = 1; return }
	RL[r] = i
	if (!PEND || RTK[r] != seq) return  # a late line of a frame already written
	h = length($1 " " $2 " " $3 " ")
	if (length(l) <= h) return
	VAL[rd_file_at(r, i)] = substr(l, h + 1)
}
# A value longer than one may be ("L <rid> <i>" from a reader): sent as "-" (not read),
# named in a warning every tick, as the fast probe does.
function rd_long(   r, i) {
	r = $2 + 0; i = $3 + 0
	if (!(r in RST) || RST[r] != 2) return
	RM[r] = 1
	RL[r] = i
	if (PEND && RTK[r] == seq) left_out(rd_file_at(r, i))
}
function left_out(p) {
	VAL[p] = "-"
	sub(/^class\/infiniband\//, "", p); sub(/^class\/net\//, "", p)
	warn("value of " clean(p) " left out: longer than 2048 bytes")
}
function rd_file_at(r, i,   c) {
	c = RCH[r]
	return (i <= CNF[c]) ? CEF[c, i] : CES[c, i - CNF[c]]
}
function rd_done(r) {
	if (!(r in RST) || RST[r] != 2) return
	RST[r] = 1
	if (PEND && RTK[r] == seq && --PW <= 0) finalize()
}
function rd_check(   c, r, p) {
	for (c = 1; c <= NCH; c++) {
		r = CR[c]
		if (r == 0 || RST[r] != 2) continue
		if (!RM[r] && LUP - RG[r] >= TO) {
			if (!RH[r]) { rd_fallback("no sysfs reader could write to /proc/<awk pid>/fd/0"); return }
			p = rd_file(r)
			RST[r] = 3
			RDIRTY = 1
			if (p != "") {
				SKIP[p] = 1
				SKIPS = SKIPS " " p
				warn("sysfs read blocked for " TO "s, skipped from now on: " clean(p))
			}
			if (PEND && RTK[r] == seq) PW--
		}
		RM[r] = 0
	}
}
function rd_fallback(why) {
	GREP = 1
	warn("sysfs reads run without a time bound: " why)
	rd_drop()
	if (PEND) { split("", VAL); read_files(FSLOW); PW = 0 }
}
# A ticker (T) or keepalive (K) line: the clock for the read deadlines.
function clock(up) {
	if (up > 0) LUP = up
	else LUP += (IV < 1000 ? IV : 1000) / 1000
	rd_check()
	if (PEND && (PW <= 0 || LUP - FUP >= TO)) finalize()
}
# Slow-cadence files go to their own section (<kind>_slow) so the collector can keep the
# latest one between slow ticks without guessing which lines of a tick are missing.
function sysfs_section(kind, slow,   i) {
	sl_reset()
	for (i = 1; i <= nf; i++) {
		if (FK[i] != kind) continue
		if (FM[i] == "n") { if (!sl_add(FR[i] " -")) break; continue }
		if (FM[i] == "s" || FM[i] == "S") continue
		if ((FP[i] in VAL) && !sl_add(FR[i] " " VAL[FP[i]])) break
	}
	sl_emit(kind, "-", CNS, "ok", "")
	if (!slow) return
	sl_reset()
	split("", GNUM); split("", GSENT); split("", GCAP)
	for (i = 1; i <= nf; i++) {
		if (FK[i] != kind) continue
		if (FM[i] == "s") { if (!sl_add(FR[i] " " gid_mark(FR[i]))) break; continue }
		if (FM[i] == "S" && (FP[i] in VAL) && gid_keep(FR[i], VAL[FP[i]]) && !sl_add(FR[i] " " VAL[FP[i]])) break
	}
	sl_emit(kind "_slow", "-", CNS, "ok", "")
}
# GID tables: the kernel lists every entry (256 per mlx5 RoCE port) and an empty one
# reads as the zero GID while its types/ndevs fail; so only populated entries go out,
# the first GIDMAX of a port, and a type only with its GID. (probe_fast.py: GidTable)
function gid_keep(r, v,   p, k) {
	p = index(r, "/gids/")
	if (p) {
		if (v == ZGID) return 0
		k = substr(r, 1, p - 1)
		if (++GNUM[k] > GIDMAX) { GCAP[k] = 1; return 0 }
		GSENT[k "/" substr(r, p + 6)] = 1
		return 1
	}
	p = index(r, "/gid_attrs/types/")
	if (p) return ((substr(r, 1, p - 1) "/" substr(r, p + 17)) in GSENT)
	return 1
}
# A marker line value: the gids marker of a port says "capped" when entries were left out.
function gid_mark(r,   k) {
	if (r !~ /\/gids$/) return "-"
	k = substr(r, 1, length(r) - 5)
	if (!(k in GCAP)) return "-"
	warn("GID table of " clean(k) ": more than " GIDMAX " entries populated, the first " GIDMAX " sent")
	return "capped"
}
# Thunderbolt files are all slow: only the slow section, on slow frames (see fab_tb).
function tb_section(   i) {
	sl_reset()
	for (i = 1; i <= nf; i++) {
		if (FK[i] != "systb") continue
		if (FM[i] == "s") { if (!sl_add(FR[i] " -")) break; continue }
		if (FM[i] == "S" && (FP[i] in VAL) && !sl_add(FR[i] " " VAL[FP[i]])) break
	}
	sl_emit("systb_slow", "-", CNS, "ok", "")
}
function cpu_section(   i, k, b, sum, ord, no) {
	no = 0
	for (i = 1; i <= nc; i++) {
		if (!(CP[i] in VAL)) continue
		b = CR_[i]; sub(/.*\//, "", b)
		if (!(b in sum)) { sum[b] = 0; ord[++no] = b }
		sum[b] += VAL[CP[i]]
	}
	sl_reset()
	for (k = 1; k <= no; k++)
		sl_add(sprintf("devices/system/cpu/cpu*/thermal_throttle/%s %.0f", ord[k], sum[ord[k]]))
	sl_emit("cputhrottle", "-", CNS, "ok", "")
}
function job(kind, subj, cmd) {
	nj++
	JK[nj] = kind; JS[nj] = subj; JC[nj] = cmd
}
function has(t) { return index(HAVE, " " t " ") > 0 }
# A line of job i, kept while the section (SCAP) and the whole tick (FCAP, summed over
# jobs) have room: lines past either cap are dropped as they arrive, so memory stays
# bounded however much a tool prints within its timeout.
function keep(i, l) {
	# nft prints a whole ruleset as one line of JSON: it goes in pieces the collector joins
	while (JK[i] == "firewall" && length(l) > 60000) { keep1(i, substr(l, 1, 60000)); l = substr(l, 60001) }
	keep1(i, l)
}
function keep1(i, l,   n, cap) {
	if (JT[i] != "") return
	if (length(l) > 65536) l = substr(l, 1, 65536)  # what esc() would send
	n = length(l) + 1
	cap = (JK[i] == "mlxlink" && SCAP > MCAP) ? MCAP : SCAP
	if (JB[i] + n > cap || JN[i] >= 200000) { JT[i] = "section cap " cap " bytes"; return }
	if (TB + n > FCAP) { JT[i] = "frame cap " FCAP " bytes"; return }
	JL[i, ++JN[i]] = l
	JB[i] += n
	TB += n
}
# Every tool of a tick runs at once, each in its own pipe under `timeout`, so one hung
# tool costs the frame one timeout, not one per interface. Each shell prints an empty
# line first: reading it starts them all before the first one is drained.
function run_jobs(   i, l, c, k) {
	for (i = 1; i <= nj; i++) {
		JN[i] = 0; JR[i] = ""; JB[i] = 0; JT[i] = ""
		if (JPRE[i] != "") { JP[i] = JPRE[i]; continue }  # mlxlink: started rounds ago, done
		JP[i] = "exec </dev/null 2>&1; echo; " TKC JC[i] "; printf \"%s\\n\" \"" NONCE " e $?\""
		JP[i] | getline l
	}
	for (i = 1; i <= nj; i++) {
		while ((JP[i] | getline l) > 0) {
			c = index(l, NONCE " e ")
			if (c > 0) {
				# output without a final newline: our marker is glued to its last line
				if (c > 1) keep(i, substr(l, 1, c - 1))
				split(substr(l, c), k, " ")
				JR[i] = k[3]
				continue
			}
			keep(i, l)
		}
		close(JP[i])
	}
}
function emit_jobs(   i, n, rc, st, det) {
	for (i = 1; i <= nj; i++) {
		rc = JR[i]; det = ""
		if (rc == "") { st = "error"; det = "no exit status" }
		else if (rc == 0) st = "ok"
		else if (TK != "" && (rc == 124 || rc == 137 || rc == 143)) { st = "timeout"; det = "after " (JK[i] == "mlxlink" ? MTO : TO) "s" }
		else { st = "error"; det = "rc=" rc }
		if (JK[i] == "gpu_amd") det = (det == "" ? "" : det " ") "tool=" JT_
		# A failed optics read backs off (its section says why; no warning: a line that
		# came once would move the generation twice)
		if (st != "ok" && (JK[i] == "ethtool_m" || JK[i] == "ethtool_fec" || JK[i] == "devlink_health" || JK[i] == "mlxlink"))
			OSKIP[JK[i], JS[i]] = OROUND + 16
		if (JK[i] == "mlxlink") { mlx_keep(i, st, det); continue }
		if (JK[i] == "ethtool_fec" && ETHV != "") det = (det == "" ? "" : det " ") "ethtool=" ETHV
		sl_reset()
		for (n = 1; n <= JN[i]; n++) { if (!sl_add(JL[i, n])) break }
		if (SLT == "") SLT = JT[i]
		sl_emit(JK[i], JS[i], CNS, st, det)
		for (n = 1; n <= JN[i]; n++) delete JL[i, n]
	}
	nj = 0
	split("", JPRE)
	if (MNEW) mlx_emit()
}
# mlxlink (docs/PROBE.md "Optics"): ~0.8 s of firmware access a call on a ConnectX-7, so
# it never runs in a tick's shared timeout, and no frame waits for it: an optics round
# starts it for one PCI function (round-robin) under its own `timeout` of MTO seconds
# (TERM, then KILL 1 s later), and the first tick after it ended reads what it printed:
# its shell says "X" on our own input when done (as the sysfs readers write there; and
# should it not, by MTO + 2 s it is over). Its latest answer of each function is kept
# and all of them go out with each new one: one function a round, and the collector
# keeps only the sections a round brings.
function mlx_start(   k, n, t, d, gone) {
	n = 0
	for (k in MCN) if (!(k in MPS)) gone[++n] = k  # a function gone: its answer too
	for (t = 1; t <= n; t++) {
		k = gone[t]
		mlx_forget(k)
		delete MCN[k]; delete MCS[k]; delete MCD[k]; delete MCX[k]; delete MCT[k]
	}
	if (!MLX || MLXR == 0 || !has("mlxlink") || TK == "" || MLC != "" || MPN == 0) return
	for (t = 0; t < MPN; t++) {
		d = MP[(MTURN + t) % MPN + 1]
		if (!(("mlxlink" SUBSEP d) in OSKIP)) break
	}
	if (t == MPN) return
	MTURN = (MTURN + t + 1) % MPN
	# Read-only flags only: -m (module) -c (counters); never --pc, which clears them.
	MLC = "exec </dev/null 2>&1; echo; " TK " " MTO " " (MLXR == 2 ? "sudo -n " : "") "mlxlink -d " d " -m -c --json; printf \"%s\\n\" \"" NONCE " e $?\"; [ -w /proc/$PPID/fd/0 ] && echo X >/proc/$PPID/fd/0"
	MLC | getline n
	MLD = d; MLU = LUP; MLT = CNS; MDONE = 0
}
function mlx_keep(i, st, det,   d, n) {
	d = JS[i]
	mlx_forget(d)
	MCN[d] = JN[i]; MCS[d] = st; MCD[d] = det; MCX[d] = JT[i]; MCT[d] = JNS[i]
	for (n = 1; n <= JN[i]; n++) { MCL[d, n] = JL[i, n]; delete JL[i, n] }
	MNEW = 1
}
function mlx_forget(d,   n) {
	for (n = 1; n <= MCN[d]; n++) delete MCL[d, n]
}
function mlx_emit(   k, d, n) {
	MNEW = 0
	for (k = 1; k <= MPN; k++) {
		d = MP[k]
		if (!(d in MCN)) continue
		sl_reset()
		for (n = 1; n <= MCN[d]; n++) { if (!sl_add(MCL[d, n])) break }
		if (SLT == "") SLT = MCX[d]
		sl_emit("mlxlink", d, MCT[d], MCS[d], MCD[d])
	}
}
function gpu_section(   k, i, st, newest) {
	newest = -1
	for (i = 1; i <= ng; i++) if (GT[GO[i]] > newest) newest = GT[GO[i]]
	st = (newest >= 0 && tn - newest < 3) ? "ok" : "stale"
	# GN gains one entry per tick with GPU lines; only ticks still in GT can be asked for.
	for (k in GN) if (k + 0 < newest) delete GN[k]
	sl_reset()
	sl_add("# " GFIELDS)
	for (i = 1; i <= ng; i++) {
		k = GO[i]
		if (st == "ok" && tn - GT[k] >= 3) continue
		if (st == "stale" && GT[k] != newest) continue
		if (!sl_add(GL[k])) break
	}
	sl_emit("gpu_nvidia", "-", (ng ? GN[newest] : "-"), st, (ng ? "" : "no line yet"))
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
function tick(ns, up, slow,   a, lag, ms, i) {
	tn++
	LNS = ns
	if (PSLOW) slow = 1
	# The previous frame still waits for its sysfs reads: this tick is dropped like a late one.
	if (PEND) { PSLOW = slow; skipped++; return }
	lag = 0
	if (rd("/proc/uptime")) { split(RV, a, " "); lag = a[1] - up }
	# The ticker does not wait for us: a tick we reach a whole interval late has a newer
	# one queued behind it, so drop it rather than stamp old times on fresh readings.
	if (lag * 1000 >= IV && up > 0) { PSLOW = slow; skipped++; return }
	PSLOW = 0
	CNS = ns
	if (lag >= 0.02 && up > 0) { ms = int(lag * 1000); CNS = addns(ns, ms); up = a[1] }
	seq++
	FB = 0; TB = 0; FSLOW = slow; FUP = LUP; OPT = 0
	o(sprintf("@@fabtop-frame %d %s %s %s.%s", seq, CNS, up, substr(CNS, 1, length(CNS) - 9), substr(CNS, length(CNS) - 8, 3)))
	split("", VAL)
	PW = 0
	if (GREP) read_files(slow)
	else rd_go(slow)
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
	if (slow && (OLAST == "" || up - OLAST >= OPTS)) optics(up)
	if (slow) {
		if (has("uname")) job("uname_r", "-", "uname -r")
		if (has("ip")) job("ip_addr", "-", "ip -o addr show")
		if (has("dpkg-query")) job("rdma_core", "dpkg-query", "dpkg-query -W -f \"$FAB_DPKGF\" rdma-core")
		else if (has("rpm")) job("rdma_core", "rpm", "rpm -q rdma-core")
		if (has("ofed_info")) job("ofed_info", "-", "ofed_info -s")
		if (GKIND == "nvidia") job("nvidia_driver", "-", "cat /proc/driver/nvidia/version")
		if (GKIND == "nvidia") job("nccl", "-", "sh -c \"$FAB_NCCL\"")
	}
	if (slow && (GKIND == "amd-smi" || GKIND == "rocm-smi")) {
		JT_ = GKIND
		if (GKIND == "amd-smi") job("gpu_amd", "-", "amd-smi metric --json")
		else job("gpu_amd", "-", "rocm-smi --showuse --showtemp --showpower --showmeminfo vram --json")
	}
	if (MLC != "" && (MDONE || LUP - MLU >= MTO + 2)) {
		job("mlxlink", MLD, "")
		JPRE[nj] = MLC; JNS[nj] = MLT; MLC = ""
	}
	if (slow && FW != "" && FWR > 0)
		job("firewall", "-", (FWR == 2 ? "sudo -n " : "") (FW == "nft" ? "nft -j list ruleset" : "iptables-save"))
	run_jobs()
	PEND = 1
	if (PW <= 0) finalize()
}
# An optics round (docs/PROBE.md "Optics"): the cable's own health of each physical
# netdev and the host's devlink health reporters, on a slow tick at least OPTS seconds
# after the last round. A read that failed is not asked again for 15 rounds (OSKIP: the
# round it may run again; a restricted mlx5 function logs ACCESS_REG failures each time).
function optics(up,   i, k) {
	OLAST = up + 0; OROUND++; OPT = 1
	for (k in OSKIP) if (OSKIP[k] <= OROUND) delete OSKIP[k]
	for (i = 1; i <= OPN && has("ethtool"); i++) {
		# Module EEPROMs need CAP_NET_ADMIN: without root or sudo -n, one section says so
		if (OMR > 0) ojob("ethtool_m", OP[i], (OMR == 2 ? "sudo -n " : "") "ethtool -m " OP[i])
		ojob("ethtool_fec", OP[i], FECCMD OP[i])
	}
	# Only `show`: a health dump can deadlock during PCI error recovery.
	if (has("devlink")) ojob("devlink_health", "-", "devlink health show")
	if (MLX) mlx_start()
}
# A read of the round, or, while it backs off, a section that says so (the collector
# would otherwise forget the port's last section: the round brought its kind).
function ojob(kind, subj, cmd) {
	if ((kind SUBSEP subj) in OSKIP) OBK[++OBN] = kind " " subj
	else job(kind, subj, cmd)
}
# Writes the frame begun by tick(): its sysfs values are in, or their deadline passed.
function finalize(   i, n, p) {
	PEND = 0
	if (PW > 0) warn("sysfs reads not done after " TO "s: values missing from this frame")
	PW = 0
	sysfs_section("sysnet", FSLOW)
	sysfs_section("sysib", FSLOW)
	if (FSLOW && NTB) tb_section()
	if (FSLOW && nc) cpu_section()
	emit_jobs()
	for (i = 1; i <= OBN; i++) { split(OBK[i], p, " "); section(p[1], p[2], CNS, "error", "backoff") }
	OBN = 0
	if (FSLOW) {
		if (!has("ethtool")) { section("ethtool_S", "-", CNS, "missing", "ethtool"); section("ethtool_i", "-", CNS, "missing", "ethtool") }
		if (!has("mlnx_qos")) section("mlnx_qos", "-", CNS, "missing", "mlnx_qos")
		if (!has("dcb")) section("dcb_pfc", "-", CNS, "missing", "dcb")
		if (GKIND == "none") section("gpu_nvidia", "-", CNS, "missing", "no nvidia-smi, amd-smi or rocm-smi")
		if (!has("uname")) section("uname_r", "-", CNS, "missing", "uname")
		if (!has("ip")) section("ip_addr", "-", CNS, "missing", "ip")
		if (!has("dpkg-query") && !has("rpm")) section("rdma_core", "-", CNS, "missing", "dpkg-query or rpm")
		if (!has("ofed_info")) section("ofed_info", "-", CNS, "missing", "ofed_info")
		if (GKIND == "none") { section("nvidia_driver", "-", CNS, "missing", "nvidia-smi"); section("nccl", "-", CNS, "missing", "nvidia-smi") }
		if (OPT && !has("devlink")) section("devlink_health", "-", CNS, "missing", "devlink")
		if (OPT && OPN && has("ethtool") && OMR == 0) section("ethtool_m", "-", CNS, "missing", "needs root")
		if (OPT && OPN && MLX) {
			if (!has("mlxlink")) section("mlxlink", "-", CNS, "missing", "mlxlink")
			else if (MLXR == 0) section("mlxlink", "-", CNS, "missing", "needs root")
			else if (TK == "") section("mlxlink", "-", CNS, "missing", "no timeout command")
		}
		if (FW == "") section("firewall", "-", CNS, "missing", "no nft or iptables-save")
		else if (FWR == 0) section("firewall", "-", CNS, "missing", "needs root")
		n = split(SKIPS, p, " ")
		for (i = 1; i <= n; i++) warn("sysfs file skipped (its read blocked): " clean(p[i]))
	}
	if (GKIND == "nvidia") gpu_section()
	section("probe", "-", CNS, "ok", "")
	o("impl sh")
	o("interval_ms " IV)
	o("slow " (FSLOW ? 1 : 0))
	if (skipped) { o("skipped_ticks " skipped); skipped = 0 }
	for (i = 1; i <= nw; i++) o(esc("warning " W[i]))
	o(gen_line())
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
	RUN = sprintf("%s-%d", RUN, int(rand() * 2147483647))  # this run: its pid, and chance
	GEN = 1
	TKC = (TK == "" ? "" : TK " " TO " ")
	ZGID = "0000:0000:0000:0000:0000:0000:0000:0000"
	GIDMAX = 64
	MTO = 3  # mlxlink's own time limit (s); an answer (4.7 KB in the capture) is kept up to MCAP bytes
	MCAP = 262144
	if (TK == "") warn("no timeout command: tools run without a time limit")
	# ethtool 5.10 added -I (--include-statistics): an older one is asked the mode only.
	split(ETHV, EV, ".")
	FECCMD = (ETHV != "" && EV[1] * 100 + EV[2] < 510) ? "ethtool --show-fec " : "ethtool -I --show-fec "
	gpu_fields(GF)
	MAXF += 0; IV += 0; TO += 0; SCAP += 0; FCAP += 0
}
$1 == "V" { rd_line($0); next }
$1 == "L" { rd_long(); next }
$1 == "D" { rd_done($2 + 0); next }
$1 == "T" { clock($3 + 0); tick($2, $3, $4 + 0); next }
$1 == "G" { gpu_line(substr($0, 3)); next }
$1 == "g" {
	if ($2 == "start") { if ($3 != GFIELDS && $3 != "") gpu_fields($3) }
	else if ($2 == "exit") warn("nvidia-smi exited rc=" clean($3))
	next
}
$1 == "R" { if (PEND) finalize(); nf = 0; ne = 0; nc = 0; NTB = 0; OPN = 0; MPN = 0; split("", MPS); RDIRTY = 1; next }
$1 == "N" || $1 == "S" || $1 == "n" || $1 == "s" {
	if (NF != 3 || $3 ~ /\.\./) next
	nf++; FM[nf] = $1; FK[nf] = $2; FR[nf] = $3
	FP[nf] = "class/" ($2 == "sysib" ? "infiniband" : "net") "/" $3
	if ($2 == "systb") { FP[nf] = "bus/thunderbolt/devices/" $3; NTB = 1 }
	next
}
$1 == "C" { if (NF == 3 && $3 !~ /\.\./) { nc++; CR_[nc] = $3; CP[nc] = $3 }; next }
$1 == "E" { if (NF == 2 && okname($2)) E[++ne] = $2; else warn("refused netdev name: " clean($2)); next }
$1 == "O" { if (NF == 2 && okname($2)) OP[++OPN] = $2; next }
$1 == "X" { MDONE = 1; next }  # the mlxlink call under way ended (mlx_start)
# A physical netdev's PCI function (mlxlink's device), each once
$1 == "P" {
	if (NF == 2 && $2 ~ /^[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]\.[0-7]$/ && !($2 in MPS)) { MPS[$2] = 1; MP[++MPN] = $2 }
	next
}
$1 == "W" { warn(clean(substr($0, 3))); next }
# Keepalive between the ticks of a long interval: an empty line (ignored by the decoder)
# makes a closed channel fail our write within a second.
$1 == "K" { clock($2 + 0); print "\n"; fflush(); next }
