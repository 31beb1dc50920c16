#!/usr/bin/env bash
# Installs a pinned Go tool from the module proxy into a cache directory outside the
# repository and prints the binary's path on the last line of stdout.
#
#   hack/tools.sh golangci-lint
#
# Cache: ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}/tools/<name>-<version>/
# Versions are pinned here and nowhere else.
set -euo pipefail

declare -A modules=(
	[golangci-lint]="github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0"
	[helm]="helm.sh/helm/v4/cmd/helm@v4.3.2"
	[benchstat]="golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
)

name="${1:?usage: hack/tools.sh TOOL}"
mod="${modules[${name}]:-}"
if [[ -z "${mod}" ]]; then
	printf 'tools: unknown tool %s (known: %s)\n' "${name}" "${!modules[*]}" >&2
	exit 2
fi
version="${mod##*@}"
cache_root="${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/claimbridge}"
dir="${cache_root}/tools/${name}-${version}"
bin="${dir}/${name}"
if [[ -x "${bin}" ]]; then
	printf '%s\n' "${bin}"
	exit 0
fi
mkdir -p "${cache_root}/tools"
exec 9>"${cache_root}/tools/.${name}.lock"
flock 9
if [[ ! -x "${bin}" ]]; then
	printf 'tools: installing %s (first run only)\n' "${mod}" >&2
	tmp="$(mktemp -d "${cache_root}/tools/.${name}.XXXXXX")"
	GOBIN="${tmp}" GOFLAGS=-mod=mod go install "${mod}"
	rm -rf "${dir}"
	mv "${tmp}" "${dir}"
fi
printf '%s\n' "${bin}"
