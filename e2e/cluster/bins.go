package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// BinDirEnv names the environment variable that points the harness at a directory holding
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl. When it is unset
// the harness takes $KUBEBUILDER_ASSETS (envtest's layout, the ecosystem's convention: one
// directory of binaries), else runs hack/e2e-bins.sh, which builds them once into a cache
// outside the repository.
const BinDirEnv = "CLAIMBRIDGE_K8S_BIN"

// AssetsEnv is envtest's variable for its binaries' directory. envtest itself ships etcd,
// kube-apiserver and kubectl; the harness also needs kube-controller-manager and
// kube-scheduler of the same version there.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// rootModule is the module path of the product, whose go.mod marks the repository root.
const rootModule = "github.com/claimbridge/claimbridge"

// Binaries the harness needs in the bin dir.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// RunHackScript runs hack/<name> of the repository at root, from root, with its progress
// written to progress, and returns the last line of its output: the directory that the
// scripts which build or fetch binaries print there. On cancellation it stops what the
// script started too, not only the script.
func RunHackScript(ctx context.Context, root, name string, progress io.Writer) (string, error) {
	script := filepath.Join(root, "hack", name)
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = root
	cmd.Stderr = progress
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("run %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// ResolveBinDir returns the directory holding the control-plane binaries: $CLAIMBRIDGE_K8S_BIN
// if set, else the output of hack/e2e-bins.sh (found by walking up from the working directory
// to the product's go.mod), whose progress is written to progress.
func ResolveBinDir(ctx context.Context, progress io.Writer) (string, error) {
	dir, from := os.Getenv(BinDirEnv), BinDirEnv
	if dir == "" {
		dir, from = os.Getenv(AssetsEnv), AssetsEnv
	}
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", fmt.Errorf("find the binaries (or set %s): %w", BinDirEnv, err)
		}
		if dir, err = RunHackScript(ctx, root, "e2e-bins.sh", progress); err != nil {
			return "", err
		}
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			if from == AssetsEnv {
				return "", fmt.Errorf("%s=%s: %w (envtest ships etcd, kube-apiserver and kubectl; put kube-controller-manager and kube-scheduler of the same version there too, or unset it to build them with hack/e2e-bins.sh)", AssetsEnv, dir, err)
			}
			return "", fmt.Errorf("bin dir %s: %w", dir, err)
		}
	}
	return dir, nil
}

// RepoRoot returns the repository root: the nearest directory at or above the working
// directory whose go.mod declares the product's module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if isRootModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module " + rootModule + " at or above the working directory")
		}
		dir = parent
	}
}

func isRootModule(goMod string) bool {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == rootModule
		}
	}
	return false
}
