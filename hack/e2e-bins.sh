#!/usr/bin/env bash
# Builds the control-plane binaries the e2e harness runs (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl) from the pinned tool modules under
# e2e/tools/ into a cache directory outside the repository, and prints that directory on the
# last line of stdout. Progress goes to stderr.
#
# Cache: ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}/k8s/<k8s>-etcd-<etcd>/
# The versions come from the tool modules' go.mod files. The directory is built, locked and
# stamped as hack/lib.sh says: complete when its stamp exists, two runs never build at once.
#
# A cold build took 857 s on 2 cores with empty Go caches (CONTRIBUTING.md, "First run") and needs ~1 GB
# of module cache and ~6 GB of build cache. A warm run only checks the stamp and says so.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${root}/e2e/tools"
# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

k8s_version="$(required_version "${tools}/kube/go.mod" k8s.io/kubernetes)"
kubectl_version="$(required_version "${tools}/kubectl/go.mod" k8s.io/kubectl)"
etcd_version="$(required_version "${tools}/etcd/go.mod" go.etcd.io/etcd/server/v3)"

key="${k8s_version}-etcd-${etcd_version}"
if [[ -f "${cache_root}/k8s/${key}/stamp" ]]; then
	log "control plane ${key} cached in ${cache_root}/k8s/${key} ($(grep '^built ' "${cache_root}/k8s/${key}/stamp" || true))"
fi
cache_begin "${cache_root}/k8s/${key}"

# kube-* read their version from component-base, kubectl's client side from client-go too.
# Without these flags they report v0.0.0-master.
version_ldflags() {
	local v="$1" minor
	minor="$(cut -d. -f2 <<<"${v}")"
	printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=${v} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/client-go/pkg/version.gitVersion=${v}"
}

# build <module dir> <ldflags> <label> <package...>: builds the packages into ${tmp}.
build() {
	local mod="$1" ldflags="$2" label="$3"
	shift 3
	build_in "${mod}" "${label}" env GOWORK=off CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "${ldflags}" -o "${tmp}/" "$@"
}

log "building the control plane ${key} once, into ${cache_dir}: three go builds, 857 s in all measured on 2 cores with empty Go caches (less when Go's build cache holds part of it); later runs take it from there"
build "${tools}/etcd" "-s -w" "[1/3] etcd ${etcd_version}" .
# kubectl's staging module is tagged v0.x for release v1.x.
build "${tools}/kubectl" "$(version_ldflags "v1.${kubectl_version#v0.}")" "[2/3] kubectl ${kubectl_version}" .
build "${tools}/kube" "$(version_ldflags "${k8s_version}")" \
	"[3/3] kube-scheduler, kube-controller-manager, kube-apiserver ${k8s_version}" \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-apiserver

for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	if [[ ! -x "${tmp}/${b}" ]]; then
		log "missing ${b} after the build"
		exit 1
	fi
done

write_stamp "kubernetes ${k8s_version}" "kubectl ${kubectl_version}" "etcd ${etcd_version}"
cache_publish
