#!/usr/bin/env bash
# Runs a command and, whenever it has printed nothing for 30 s, prints one line on stderr: the
# step, the time it has run, and what it is doing when its processes tell (the packages the Go
# compiler is compiling, the test binary that runs, dpkg unpacking a package, …). The command's
# output passes through as it comes, stdout to stdout and stderr to stderr; its exit code is the
# script's. make test runs its long steps under it, so that a cold run never looks hung.
#
#   hack/heartbeat.sh LABEL COMMAND [ARG...]
#   hack/heartbeat.sh unit go test -race ./...
#   unit: still running after 4m30s (no output for 4m30s): compiling k8s.io/api/core/v1, k8s.io/apimachinery/pkg/util/sets (+1 more)
#
# HEARTBEAT_INTERVAL (seconds, default 30) is how long a silence lasts before a line. Output is
# relayed line by line: a command that writes a partial line and then stays silent shows it
# when it ends the line. HEARTBEAT_TO=N is for a command whose output goes to files or a
# variable, which nobody sees while it runs: the lines go to file descriptor N, one every
# interval however much the command writes.
set -uo pipefail

if (($# < 2)); then
	echo "usage: hack/heartbeat.sh LABEL COMMAND [ARG...]" >&2
	exit 2
fi
label="$1"
shift
interval="${HEARTBEAT_INTERVAL:-30}"
to="${HEARTBEAT_TO:-}"

work="$(mktemp -d "${TMPDIR:-/tmp}/heartbeat.XXXXXX")"
mkfifo "${work}/out" "${work}/err"
# The last time (bash's SECONDS) the command printed something.
printf '%s' "${SECONDS}" >"${work}/last"

# relay FD: copies the fifo to FD line by line, noting the time of each line.
relay() {
	local line
	while IFS= read -r line || [[ -n "${line}" ]]; do
		printf '%s\n' "${line}" >&"$1"
		[[ -n "${to}" ]] || printf '%s' "${SECONDS}" >"${work}/last"
	done
}

# human SECONDS: 75 → 1m15s.
human() {
	if (($1 < 60)); then
		printf '%ds' "$1"
	else
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	fi
}

# doing PID: what the processes under PID do, from their command lines; empty when unknown.
doing() {
	ps -e -o pid=,ppid=,args= 2>/dev/null | awk -v root="$1" '
	{
		pid = $1; ppid[pid] = $2; $1 = ""; $2 = ""; args[pid] = substr($0, 3)
	}
	END {
		under[root] = 1
		do {
			grew = 0
			for (p in ppid) if (!(p in under) && (ppid[p] in under)) { under[p] = 1; grew = 1 }
		} while (grew)
		delete under[root]
		nc = 0; nl = 0; nt = 0; other = ""
		for (p in under) {
			n = split(args[p], a, " ")
			prog = a[1]; sub(/.*\//, "", prog)
			if (prog == "compile") {
				for (i = 1; i < n; i++) if (a[i] == "-p") { nc++; if (nc <= 2) comp = comp (nc > 1 ? ", " : "") a[i+1] }
			} else if (prog == "link") {
				nl++
			} else if (prog ~ /\.test$/) {
				nt++; if (nt <= 2) tests = tests (nt > 1 ? ", " : "") prog
			} else if (prog == "dpkg" || prog == "apt-get" || prog == "apt" || prog == "http" || prog == "https") {
				pkg = prog
			} else if (prog !~ /^(bash|sh|sleep|ps|awk|make|go|env|tail|cat)$/) {
				other = prog
			}
		}
		out = ""
		if (nc > 0) out = "compiling " comp (nc > 2 ? " (+" nc - 2 " more)" : "")
		if (nl > 0) out = out (out != "" ? "; " : "") "linking " nl " binar" (nl > 1 ? "ies" : "y")
		if (nt > 0) out = out (out != "" ? "; " : "") "running " tests (nt > 2 ? " (+" nt - 2 " more)" : "")
		if (out == "" && pkg != "") out = "installing packages (" pkg ")"
		if (out == "" && other != "") out = "running " other
		print out
	}'
}

# A background command reads /dev/null unless told otherwise: give it the script's stdin.
exec {stdin}<&0
"$@" <&"${stdin}" >"${work}/out" 2>"${work}/err" &
cmd=$!
exec {stdin}<&-
relay 1 <"${work}/out" &
relay_out=$!
relay 2 <"${work}/err" &
relay_err=$!

(
	start="${SECONDS}" beat="${SECONDS}"
	while sleep 1; do
		last="$(<"${work}/last")"
		if ((SECONDS - (last > beat ? last : beat) >= interval)); then
			what="$(doing "${cmd}")"
			quiet=" (no output for $(human $((SECONDS - last))))"
			[[ -z "${to}" ]] || quiet=""
			printf '%s: still running after %s%s%s\n' "${label}" "$(human $((SECONDS - start)))" \
				"${quiet}" "${what:+: ${what}}" >&"${to:-2}"
			beat="${SECONDS}"
		fi
	done
) &
watcher=$!

cleanup() {
	kill "${watcher}" 2>/dev/null
	wait "${watcher}" 2>/dev/null
	rm -rf "${work}"
}
trap cleanup EXIT
trap 'kill -TERM "${cmd}" 2>/dev/null' INT TERM

wait "${cmd}"
rc=$?
# wait returns early when a trapped signal arrives: wait again for the command itself.
while kill -0 "${cmd}" 2>/dev/null; do
	wait "${cmd}"
	rc=$?
done
wait "${relay_out}" "${relay_err}"
exit "${rc}"
