# shellcheck shell=bash
# Sourced by the hack/*.sh scripts that fetch or build something once (e2e-bins.sh,
# cert-manager-bins.sh, tools.sh, chromium.sh): the cache, its lock, progress lines.
#
#   cache_root                the cache, outside the repository:
#                             ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}
#   log MSG...                a progress line on stderr, "<script>: MSG" (stdout is the answer)
#   lock FILE WHAT            holds the lock FILE (fd 9) until the script exits; a second run
#                             waits for the first, saying "another run is WHAT"
#   required_version GOMOD M  the version of module M that the go.mod GOMOD requires
#   cache_begin DIR [FILE]    the start of a run that fills the cache directory DIR once (below)
#   build_in DIR LABEL CMD... runs CMD in DIR with a progress line every 30 s (its time and,
#                             after cache_begin, the run's)
#   write_stamp LINE...       writes ${tmp}/stamp: the lines, the Go version, when and how long
#   cache_publish             moves ${tmp} into place as DIR, says how long it took and prints
#                             the answer
#
# A cache directory is complete when its marker exists: DIR/stamp, or DIR/FILE for a directory
# that holds one tool. The script's answer, printed on the last line of stdout (the Makefile
# reads it with tail -n1), is DIR, or DIR/FILE. Everything is built into ${tmp}, a temporary
# directory next to DIR; the stamp is written last and the directory renamed into place, so a
# directory is complete or absent. The lock serialises concurrent runs: the second one reuses
# the result of the first.

cache_root="${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/claimbridge}"

lib_script="$(basename "${BASH_SOURCE[1]}" .sh)"

log() { printf '%s: %s\n' "${lib_script}" "$*" >&2; }

lock() {
	exec 9>"$1"
	if ! flock -n 9; then
		log "another run is $2; waiting for it"
		flock 9
	fi
}

required_version() {
	local v
	v="$(awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { print $2 == m ? $3 : $2; exit }' "$1")"
	if [[ -z "${v}" ]]; then
		log "no requirement on $2 in $1"
		exit 1
	fi
	printf '%s' "${v}"
}

# cache_begin DIR [FILE]: when DIR is complete, prints the answer and exits. Otherwise takes the
# lock DIR's parent/.<DIR's name>.lock, looks again (a run it waited for may have filled DIR),
# clears what an interrupted build left and sets tmp, removed on exit unless published.
cache_begin() {
	cache_dir="$1"
	cache_marker="${cache_dir}/${2:-stamp}"
	cache_answer="${cache_dir}${2:+/$2}"
	if [[ -f "${cache_marker}" ]]; then
		printf '%s\n' "${cache_answer}"
		exit 0
	fi
	local parent="${cache_dir%/*}" key="${cache_dir##*/}"
	mkdir -p "${parent}"
	lock "${parent}/.${key}.lock" "building ${key}"
	if [[ -f "${cache_marker}" ]]; then
		printf '%s\n' "${cache_answer}"
		exit 0
	fi
	# A directory without its marker cannot come from cache_publish (it renames complete
	# directories only); clear whatever is there, and what interrupted builds left behind.
	rm -rf "${cache_dir}" "${parent}/.${key}.tmp."*
	tmp="$(mktemp -d "${parent}/.${key}.tmp.XXXXXX")"
	cache_started="${SECONDS}"
	trap cache_cleanup EXIT
}

ticker=""
cache_started=""

stop_ticker() {
	if [[ -n "${ticker}" ]]; then
		kill "${ticker}" 2>/dev/null || true
		wait "${ticker}" 2>/dev/null || true
	fi
	ticker=""
}

cache_cleanup() {
	stop_ticker
	chmod -R u+w "${tmp}" 2>/dev/null || true # copies of the module cache are read-only
	rm -rf "${tmp}"
}

build_in() {
	local dir="$1" label="$2" start="${SECONDS}"
	shift 2
	log "building ${label}"
	(
		exec 9>&- # the lock stays with the script only
		n=0
		while sleep 1; do
			n=$((n + 1))
			if ((n % 30 == 0)); then
				log "  still building ${label} ($((SECONDS - start)) s${cache_started:+; $((SECONDS - cache_started)) s in all})"
			fi
		done
	) &
	ticker=$!
	(cd "${dir}" && "$@")
	stop_ticker
	log "built ${label} in $((SECONDS - start)) s"
}

write_stamp() {
	{
		printf '%s\n' "$@"
		printf 'go %s\nbuilt %s in %s s\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - cache_started))"
	} >"${tmp}/stamp"
}

cache_publish() {
	chmod 0755 "${tmp}"
	mv -T "${tmp}" "${cache_dir}"
	trap - EXIT
	log "done in $((SECONDS - cache_started)) s"
	printf '%s\n' "${cache_answer}"
}
