#!/usr/bin/env bash
# Builds the control-plane binaries the e2e harness runs (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl) from the pinned tool modules under
# e2e/tools/ into a cache directory outside the repository, and prints that directory on the
# last line of stdout. Progress goes to stderr.
#
# Cache: ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}/k8s/<k8s>-etcd-<etcd>/
# The versions come from the tool modules' go.mod files. A directory is complete when its
# stamp file exists: binaries are built into a temporary directory next to it, the stamp is
# written last and the directory is renamed into place. A lock file serialises concurrent
# runs, so two of them never build at the same time; the second one reuses the result.
#
# A cold build takes about 20 minutes on 2 cores and needs ~1 GB of module cache and ~6 GB of
# build cache. A warm run only checks the stamp.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${root}/e2e/tools"

log() { printf 'e2e-bins: %s\n' "$*" >&2; }

# required_version <go.mod> <module path>: the version the go.mod requires.
required_version() {
	local v
	v="$(awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { print $NF; exit }' "$1")"
	if [[ -z "${v}" ]]; then
		log "no requirement on $2 in $1"
		exit 1
	fi
	printf '%s' "${v}"
}

k8s_version="$(required_version "${tools}/kube/go.mod" k8s.io/kubernetes)"
kubectl_version="$(required_version "${tools}/kubectl/go.mod" k8s.io/kubectl)"
etcd_version="$(required_version "${tools}/etcd/go.mod" go.etcd.io/etcd/server/v3)"

cache_root="${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/claimbridge}"
parent="${cache_root}/k8s"
key="${k8s_version}-etcd-${etcd_version}"
dir="${parent}/${key}"
stamp="${dir}/stamp"

if [[ -f "${stamp}" ]]; then
	printf '%s\n' "${dir}"
	exit 0
fi

mkdir -p "${parent}"
exec 9>"${parent}/.${key}.lock"
if ! flock -n 9; then
	log "another run is building ${key}; waiting for it"
	flock 9
fi
if [[ -f "${stamp}" ]]; then
	printf '%s\n' "${dir}"
	exit 0
fi
# A directory without a stamp cannot come from this script (it renames complete directories
# only); clear whatever is there, and what interrupted builds left behind.
rm -rf "${dir}" "${parent}/.${key}.tmp."*

tmp="$(mktemp -d "${parent}/.${key}.tmp.XXXXXX")"
ticker=""
cleanup() {
	if [[ -n "${ticker}" ]]; then kill "${ticker}" 2>/dev/null || true; fi
	rm -rf "${tmp}"
}
trap cleanup EXIT

# kube-* read their version from component-base, kubectl's client side from client-go too.
# Without these flags they report v0.0.0-master.
version_ldflags() {
	local v="$1" minor
	minor="$(cut -d. -f2 <<<"${v}")"
	printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=${v} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/client-go/pkg/version.gitVersion=${v}"
}

# build <module dir> <ldflags> <label> <package...>: builds the packages into ${tmp}.
build() {
	local mod="$1" ldflags="$2" label="$3" start
	shift 3
	start="${SECONDS}"
	log "building ${label}"
	(
		exec 9>&- # the lock stays with the script only
		n=0
		while sleep 1; do
			n=$((n + 1))
			if ((n % 60 == 0)); then log "  still building ${label} ($((SECONDS - start)) s)"; fi
		done
	) &
	ticker=$!
	(
		cd "${mod}"
		GOWORK=off CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "${ldflags}" -o "${tmp}/" "$@"
	)
	kill "${ticker}" 2>/dev/null || true
	wait "${ticker}" 2>/dev/null || true
	ticker=""
	log "built ${label} in $((SECONDS - start)) s"
}

total="${SECONDS}"
log "cold build of ${key} into ${dir} (about 20 minutes on 2 cores)"
build "${tools}/etcd" "-s -w" "etcd ${etcd_version}" .
# kubectl's staging module is tagged v0.x for release v1.x.
build "${tools}/kubectl" "$(version_ldflags "v1.${kubectl_version#v0.}")" "kubectl ${kubectl_version}" .
build "${tools}/kube" "$(version_ldflags "${k8s_version}")" \
	"kube-scheduler, kube-controller-manager, kube-apiserver ${k8s_version}" \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-apiserver

for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	if [[ ! -x "${tmp}/${b}" ]]; then
		log "missing ${b} after the build"
		exit 1
	fi
done

{
	printf 'kubernetes %s\nkubectl %s\netcd %s\n' "${k8s_version}" "${kubectl_version}" "${etcd_version}"
	printf 'go %s\nbuilt %s in %s s\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - total))"
} >"${tmp}/stamp"
chmod 0755 "${tmp}"
mv -T "${tmp}" "${dir}"
log "done in $((SECONDS - total)) s"
printf '%s\n' "${dir}"
