#!/usr/bin/env bash
# Builds the cert-manager the e2e suite runs (controller and cainjector, with the CRDs of the
# same release) from cert-manager's own modules, vendored under e2e/third_party/cert-manager/,
# into a cache directory outside the repository, and prints that directory on the last line
# of stdout.
# Progress goes to stderr. The same conventions as hack/e2e-bins.sh:
#
# Cache: ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claimbridge}/cert-manager/<cert-manager>-k8s-<client-go>/
#   controller, cainjector, crds/*.yaml (deploy/crds of github.com/cert-manager/cert-manager), stamp
# The versions come from those modules' go.mod files. The directory is built, locked and
# stamped as hack/lib.sh says: complete when its stamp exists, two runs never build at once.
#
# The controller is built without the Venafi issuer: its SDK (github.com/Venafi/vcert/v5) is
# not available from the module proxy, and cert-manager's controller defaults import the
# Venafi controllers for their names only. The build therefore uses a copy of the
# cert-manager module (from the module cache, at the pinned version) in which that one file
# names them as strings — see e2e/third_party/cert-manager/README.md. A cold build takes about
# 3 to 5 minutes on 2 cores once the control-plane binaries are built (they share most of
# the build cache); a warm run only checks the stamp.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
vendored="${root}/e2e/third_party/cert-manager"
# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

cm_version="$(required_version "${vendored}/controller/go.mod" github.com/cert-manager/cert-manager)"
cainjector_version="$(required_version "${vendored}/cainjector/go.mod" github.com/cert-manager/cert-manager)"
k8s_version="$(required_version "${vendored}/controller/go.mod" k8s.io/client-go)"
if [[ "${cm_version}" != "${cainjector_version}" ]]; then
	log "controller (${cm_version}) and cainjector (${cainjector_version}) require different cert-manager versions"
	exit 1
fi

key="${cm_version}-k8s-${k8s_version}"
cache_begin "${cache_root}/cert-manager/${key}"

# cert-manager reports its version from pkg/util (cmd/ctl and the controller's logs).
ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=${cm_version}"

# build <module dir> <label> <output> [go build flags...]: builds the module's main package.
build() {
	local mod="$1" label="$2" out="$3"
	shift 3
	build_in "${mod}" "${label}" env GOWORK=off CGO_ENABLED=0 GOFLAGS= go build -trimpath -buildvcs=false -ldflags "${ldflags}" "$@" -o "${out}" .
}

log "cold build of cert-manager ${key} into ${cache_dir}"

# The module at the pinned version, as the proxy serves it (checked against go.sum).
src="$(cd "${vendored}/controller" && GOWORK=off GOFLAGS=-mod=mod "${root}/hack/heartbeat.sh" "cert-manager-bins: go mod download" go mod download -json "github.com/cert-manager/cert-manager@${cm_version}" | awk -F'"' '$2 == "Dir" { print $4 }')"
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
cp "${vendored}/controller/go.mod" "${vendored}/controller/go.sum" "${tmp}/"
printf '\nreplace github.com/cert-manager/cert-manager => %s\n' "${tmp}/cert-manager" >>"${tmp}/go.mod"

build "${vendored}/controller" "cert-manager controller ${cm_version}" "${tmp}/controller" -modfile="${tmp}/go.mod"
build "${vendored}/cainjector" "cert-manager cainjector ${cm_version}" "${tmp}/cainjector"
rm -rf "${tmp}/cert-manager" "${tmp}/go.mod" "${tmp}/go.sum"

for b in controller cainjector; do
	if [[ ! -x "${tmp}/${b}" ]]; then
		log "missing ${b} after the build"
		exit 1
	fi
done

write_stamp "cert-manager ${cm_version}" "k8s.io/client-go ${k8s_version}"
cache_publish
