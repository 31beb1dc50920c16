#!/usr/bin/env bash
# Builds the cert-manager the e2e suite runs (controller and cainjector, with the CRDs of the
# same release) from the pinned tool modules under e2e/tools/cert-manager/ into a cache
# directory outside the repository, and prints that directory on the last line of stdout.
# Progress goes to stderr. The same conventions as hack/e2e-bins.sh:
#
# Cache: ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}/cert-manager/<cert-manager>-k8s-<client-go>/
#   controller, cainjector, crds/*.yaml (deploy/crds of github.com/cert-manager/cert-manager), stamp
# The versions come from the tool modules' go.mod files. A directory is complete when its
# stamp file exists: everything is built into a temporary directory next to it, the stamp is
# written last and the directory is renamed into place. A lock file serialises concurrent
# runs; the second one reuses the result.
#
# The controller is built without the Venafi issuer: its SDK (github.com/Venafi/vcert/v5) is
# not available from the module proxy, and cert-manager's controller defaults import the
# Venafi controllers for their names only. The build therefore uses a copy of the
# cert-manager module (from the module cache, at the pinned version) in which that one file
# names them as strings — see e2e/tools/cert-manager/README.md. A cold build takes about
# 3 to 5 minutes on 2 cores once the control-plane binaries are built (they share most of
# the build cache); a warm run only checks the stamp.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${root}/e2e/tools/cert-manager"

log() { printf 'cert-manager-bins: %s\n' "$*" >&2; }

# required_version <go.mod> <module path>: the version the go.mod requires.
required_version() {
	local v
	v="$(awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { print $2 == m ? $3 : $2; exit }' "$1")"
	if [[ -z "${v}" ]]; then
		log "no requirement on $2 in $1"
		exit 1
	fi
	printf '%s' "${v}"
}

cm_version="$(required_version "${tools}/controller/go.mod" github.com/cert-manager/cert-manager)"
cainjector_version="$(required_version "${tools}/cainjector/go.mod" github.com/cert-manager/cert-manager)"
k8s_version="$(required_version "${tools}/controller/go.mod" k8s.io/client-go)"
if [[ "${cm_version}" != "${cainjector_version}" ]]; then
	log "controller (${cm_version}) and cainjector (${cainjector_version}) require different cert-manager versions"
	exit 1
fi

cache_root="${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/claimbridge}"
parent="${cache_root}/cert-manager"
key="${cm_version}-k8s-${k8s_version}"
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
rm -rf "${dir}" "${parent}/.${key}.tmp."*

tmp="$(mktemp -d "${parent}/.${key}.tmp.XXXXXX")"
ticker=""
cleanup() {
	if [[ -n "${ticker}" ]]; then kill "${ticker}" 2>/dev/null || true; fi
	chmod -R u+w "${tmp}" 2>/dev/null || true
	rm -rf "${tmp}"
}
trap cleanup EXIT

# cert-manager reports its version from pkg/util (cmd/ctl and the controller's logs).
ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=${cm_version}"

# build <module dir> <label> <output> [go build flags...]: builds the module's main package.
build() {
	local mod="$1" label="$2" out="$3" start
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
		GOWORK=off CGO_ENABLED=0 GOFLAGS= go build -trimpath -buildvcs=false -ldflags "${ldflags}" "$@" -o "${out}" .
	)
	kill "${ticker}" 2>/dev/null || true
	wait "${ticker}" 2>/dev/null || true
	ticker=""
	log "built ${label} in $((SECONDS - start)) s"
}

total="${SECONDS}"
log "cold build of cert-manager ${key} into ${dir}"

# The module at the pinned version, as the proxy serves it (checked against go.sum).
src="$(cd "${tools}/controller" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "github.com/cert-manager/cert-manager@${cm_version}" | awk -F'"' '$2 == "Dir" { print $4 }')"
if [[ ! -d "${src}/deploy/crds" ]]; then
	log "no deploy/crds in ${src}"
	exit 1
fi
mkdir -p "${tmp}/crds"
cp "${src}"/deploy/crds/*.yaml "${tmp}/crds/"

# The patched copy: internal/apis/config/controller/v1alpha1/defaults.go names the two
# Venafi controllers as strings instead of importing their packages.
cp -r "${src}" "${tmp}/cert-manager"
chmod -R u+w "${tmp}/cert-manager"
defaults="${tmp}/cert-manager/internal/apis/config/controller/v1alpha1/defaults.go"
sed -i \
	-e '\#"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/venafi"#d' \
	-e '\#"github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/venafi"#d' \
	-e 's/crvenaficontroller\.CRControllerName/"certificaterequests-issuer-venafi"/g' \
	-e 's/csrvenaficontroller\.CSRControllerName/"certificatesigningrequests-issuer-venafi"/g' \
	"${defaults}"
if grep -q 'venaficontroller' "${defaults}" || ! grep -q '"certificaterequests-issuer-venafi"' "${defaults}"; then
	log "patching ${defaults#"${tmp}/"} did not apply; cert-manager ${cm_version} changed it"
	exit 1
fi
cp "${tools}/controller/go.mod" "${tools}/controller/go.sum" "${tmp}/"
printf '\nreplace github.com/cert-manager/cert-manager => %s\n' "${tmp}/cert-manager" >>"${tmp}/go.mod"

build "${tools}/controller" "cert-manager controller ${cm_version}" "${tmp}/controller" -modfile="${tmp}/go.mod"
build "${tools}/cainjector" "cert-manager cainjector ${cm_version}" "${tmp}/cainjector"
rm -rf "${tmp}/cert-manager" "${tmp}/go.mod" "${tmp}/go.sum"

for b in controller cainjector; do
	if [[ ! -x "${tmp}/${b}" ]]; then
		log "missing ${b} after the build"
		exit 1
	fi
done

{
	printf 'cert-manager %s\nk8s.io/client-go %s\n' "${cm_version}" "${k8s_version}"
	printf 'go %s\nbuilt %s in %s s\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - total))"
} >"${tmp}/stamp"
chmod 0755 "${tmp}"
mv -T "${tmp}" "${dir}"
trap - EXIT
log "done in $((SECONDS - total)) s"
printf '%s\n' "${dir}"
