// Command kubectl is kubectl at the version pinned in go.mod, built for the e2e harness and the
// dev cluster. It mirrors k8s.io/kubernetes/cmd/kubectl, which is not part of the k8s.io/kubectl
// module.
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins, as upstream kubectl
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// As upstream: set the verbosity before the command is built, so that klog honours it
	// while plugins and .kuberc are processed.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck // upstream ignores it too
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
