package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Eventually polls cond every 100ms until it returns true, failing the test
// after timeout with the last error cond returned. An error from cond does not
// stop the polling: it is kept for the failure message.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
	}
}

// BuildClaimbridge builds cmd/claimbridge of the repository into dir and
// returns the binary's path.
func BuildClaimbridge(ctx context.Context, dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "claimbridge")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/claimbridge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build claimbridge: %w\n%s", err, out)
	}
	return bin, nil
}

// GPUTolerations are those of tolerations for the nvidia.com/gpu taint (the
// DefaultTolerationSeconds plugin adds others to every pod).
func GPUTolerations(tolerations []corev1.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range tolerations {
		if t.Key == "nvidia.com/gpu" {
			out = append(out, t)
		}
	}
	return out
}
