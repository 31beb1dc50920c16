#!/usr/bin/env bash
# Installs a pinned Go tool from the module proxy into a cache directory outside the
# repository and prints the binary's path on the last line of stdout.
#
#   hack/tools.sh golangci-lint
#
# Cache: ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}/tools/<name>-<version>/
# installed and locked as hack/lib.sh says: complete when the binary is there.
# Versions are pinned here and nowhere else.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

declare -A modules=(
	[golangci-lint]="github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0"
	[helm]="helm.sh/helm/v4/cmd/helm@v4.3.2"
	[deadcode]="golang.org/x/tools/cmd/deadcode@v0.52.0"
	[benchstat]="golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
)

name="${1:?usage: hack/tools.sh TOOL}"
mod="${modules[${name}]:-}"
if [[ -z "${mod}" ]]; then
	log "unknown tool ${name} (known: ${!modules[*]})"
	exit 2
fi
cache_begin "${cache_root}/tools/${name}-${mod##*@}" "${name}"
log "installing ${mod} (first run only)"
GOBIN="${tmp}" GOFLAGS=-mod=mod "${root}/hack/heartbeat.sh" "tools: go install ${name}" go install "${mod}"
cache_publish
