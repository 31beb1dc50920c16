#!/usr/bin/env bash
# make dev-cluster: builds what the dev cluster runs, each piece once, saying which and for how
# long, then runs e2e/cmd/devcluster with the script's arguments (DEV_CLUSTER_ARGS) until Ctrl-C.
#
#   1. the control plane: hack/e2e-bins.sh, cached outside the repository (a cold build is the
#      long part: 857 s on 2 cores with empty Go caches; a warm run finds it in the cache);
#   2. devcluster itself: go build of e2e/cmd/devcluster (213 s on an empty Go build cache,
#      about 12 s after);
#   3. devcluster then starts the control plane, publishes the fleet, builds claimbridge for this
#      platform (as make image does: 291 s on an empty Go build cache, 7 s after) and starts it,
#      numbering its own steps.
#
# First run on 2 cores: about 23 minutes; with everything cached, about 30 s to "Press Ctrl-C".
# (Measured on a 2-core machine shared with other builds: the Go builds with an empty build
# cache and the module cache filled, the warm start with nothing changed since the last one.)
#
# devcluster is built and run directly (not go run, which reports an interrupt as a failure).
# Ctrl-C reaches devcluster, which stops the cluster; the script then removes the binary.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${root}/hack/lib.sh"

log "builds what it runs, each once: 1. the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) into ${cache_root}/k8s; 2. devcluster; 3. claimbridge, then starts the cluster. The first run takes about 23 minutes on 2 cores (857 s, 213 s and 291 s of builds), later ones about 30 s"
bins="$("${root}/hack/e2e-bins.sh" | tail -n1)"

tmp="$(mktemp -d)"
trap 'stop_ticker; rm -rf "${tmp}"' EXIT
trap 'exit 130' INT TERM
build_in "${root}/e2e" "devcluster (go build ./cmd/devcluster)" go build -o "${tmp}/devcluster" ./cmd/devcluster

CLAIMBRIDGE_K8S_BIN="${bins}" "${tmp}/devcluster" "$@"
