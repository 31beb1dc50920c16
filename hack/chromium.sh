#!/usr/bin/env bash
# Installs headless Chromium from the distribution's packages when it is missing and prints the
# browser's path on the last line of stdout. Idempotent: a present browser is printed at once.
#
#   hack/chromium.sh
#
# The report's browser tests (go test ./cmd/claimbridge, e2e/suite) run the browser this
# prints; `make unit` and `make e2e` call it first. Installing needs root (or sudo) and
# Debian/Ubuntu's apt-get: it installs the packages chromium and fonts-dejavu-core system-wide,
# with their dependencies (25 packages, 348 MB on a fresh Debian). To install nothing:
# CLAIMBRIDGE_CHROMIUM=<path> names a browser to use instead; CLAIMBRIDGE_CHROMIUM=none prints an
# empty line, and the browser tests skip and say why unless a browser is on PATH, as they do
# when there is no root or sudo to install with.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

find_browser() {
	local c
	for c in "${CLAIMBRIDGE_CHROMIUM:-}" chromium chromium-browser google-chrome-stable google-chrome; do
		[[ -n "${c}" ]] || continue
		if command -v "${c}" >/dev/null 2>&1; then
			command -v "${c}"
			return 0
		fi
	done
	return 1
}

if [[ "${CLAIMBRIDGE_CHROMIUM:-}" == none ]]; then
	log "CLAIMBRIDGE_CHROMIUM=none: no browser, the browser tests skip"
	printf '\n'
	exit 0
fi
if path="$(find_browser)"; then
	printf '%s\n' "${path}"
	exit 0
fi
if [[ -n "${CLAIMBRIDGE_CHROMIUM:-}" ]]; then
	log "CLAIMBRIDGE_CHROMIUM=${CLAIMBRIDGE_CHROMIUM} is not an executable"
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	log "no chromium in PATH and no apt-get to install it; install Chromium and set CLAIMBRIDGE_CHROMIUM"
	exit 1
fi
sudo=()
if [[ "$(id -u)" != 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
		log "installing Chromium needs root: run  sudo apt-get install chromium  (or set CLAIMBRIDGE_CHROMIUM)"
		exit 1
	fi
	sudo=(sudo -n)
fi

# Concurrent runs wait for each other.
lock "${TMPDIR:-/tmp}/claimbridge-chromium.lock" "installing Chromium"
if ! path="$(find_browser)"; then
	log "installing Chromium system-wide with apt-get for the report's browser tests (first run only): the packages chromium and fonts-dejavu-core and their dependencies, about 25 packages and 348 MB on a fresh Debian; CLAIMBRIDGE_CHROMIUM=<path> uses a browser you have instead"
	export DEBIAN_FRONTEND=noninteractive
	"${root}/hack/heartbeat.sh" "chromium: apt-get update" "${sudo[@]}" apt-get update -qq >&2
	"${root}/hack/heartbeat.sh" "chromium: apt-get install" "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
	path="$(find_browser)"
fi
printf '%s\n' "${path}"
