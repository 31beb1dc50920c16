package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Stamp is what the build stamped into the binary (cmd/claimbridge's main
// sets it from its ldflags before Main runs).
var Stamp = struct{ Version, Commit string }{Version: "dev"}

// versionInfo is what `claimbridge version` prints: the stamped version, else the module
// version of a `go install …@version` build, else "dev".
func versionInfo() (v, c string) {
	v, c = Stamp.Version, Stamp.Commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		if c == "" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			v, commit := versionInfo()
			fmt.Fprintf(c.OutOrStdout(), "claimbridge %s (commit %s, %s, %s/%s; DRA resource.k8s.io/v1, Kubernetes 1.37)\n",
				v, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
