#!/usr/bin/env bash
# Installs headless Chromium from the distribution's packages when it is missing and prints the
# browser's path on the last line of stdout. Idempotent: a present browser is printed at once.
#
#   hack/chromium.sh
#
# CLAIMBRIDGE_CHROMIUM=<path> names a browser to use instead (nothing is installed). The report's
# browser tests (go test ./cmd/claimbridge, e2e/suite) run the browser this prints; `make unit`
# and `make e2e` call it first. Installing needs root (or sudo) and Debian/Ubuntu's apt-get.
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

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
	log "installing the chromium package (first run only)"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq >&2
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
	path="$(find_browser)"
fi
printf '%s\n' "${path}"
