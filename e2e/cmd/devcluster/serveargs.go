package main

import (
	"fmt"
	"slices"
	"strings"
)

// wiredServeFlags are the `claimbridge serve` flags devcluster sets itself to wire the binary to
// the cluster (binary.StartReplicas): its namespace, the certificate the webhook configuration
// trusts, the loopback ports the configuration, the report and the readiness wait point at, the
// leader election of -replicas and the chart's HTTPS for /metrics and /report, which the
// printed commands use. Setting one of them again would cut the webhook off from kube-apiserver
// or devcluster from the webhook, or make the printed commands wrong.
var wiredServeFlags = []string{
	"--namespace", "--tls-mode", "--cert-dir", "--webhook-port",
	"--metrics-bind-address", "--health-probe-bind-address", "--leader-elect", "--metrics-secure",
}

// serveArgs returns the flags appended to devcluster's own `claimbridge serve` flags: those of
// -serve-arg in order, then the arguments after "--". They come after devcluster's, so a flag
// given twice (--log-level) takes the user's value. An argument that does not start with "-" is
// the value of the flag before it (-serve-arg --policy -serve-arg p.yaml). A flag devcluster
// wires itself is an error.
func serveArgs(fromFlags, afterDashes []string) ([]string, error) {
	args := slices.Concat(fromFlags, afterDashes)
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		for _, w := range wiredServeFlags {
			if name == w || name == w[1:] {
				return nil, fmt.Errorf("serve flag %s: devcluster sets it itself (the webhook configuration, the report and the readiness wait depend on it)", w)
			}
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("serve argument %q: not a flag (claimbridge serve takes no arguments)", args[0])
	}
	return args, nil
}
