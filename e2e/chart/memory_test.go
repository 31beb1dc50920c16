package chart

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/server"
)

// memoryLimitProbe, when set in the environment, makes the test binary
// set the memory limit as claimbridge serve does from its environment,
// print the limit the Go runtime then has and exit.
const memoryLimitProbe = "CLAIMBRIDGE_TEST_PRINT_MEMORY_LIMIT"

func TestMain(m *testing.M) {
	if os.Getenv(memoryLimitProbe) != "" {
		if _, _, err := server.ApplyMemoryLimit(os.Getenv); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.FormatInt(debug.SetMemoryLimit(-1), 10))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTheGoRuntimesLimitIsTheContainersLess64Mi(t *testing.T) {
	for name, tc := range map[string]struct {
		values string
		// wantBytes is the container's limit in bytes, 0 for none; wantGo the
		// Go runtime's: 64Mi less.
		wantBytes, wantGo int64
	}{
		"the default limit":        {values: "", wantBytes: 512 << 20, wantGo: 448 << 20},
		"a limit for 5,000 nodes":  {values: "resources: {limits: {memory: 1536Mi}}", wantBytes: 1536 << 20, wantGo: 1472 << 20},
		"a limit in decimal units": {values: "resources: {limits: {memory: 2G}}", wantBytes: 2_000_000_000, wantGo: 2_000_000_000 - 64<<20},
		"no limit, none set":       {values: "resources: {limits: null, requests: {cpu: 100m, memory: 128Mi}}"},
	} {
		t.Run(name, func(t *testing.T) {
			d := decodeOne[appsv1.Deployment](t, render(t, tc.values), "Deployment", "claimbridge")
			c := d.Spec.Template.Spec.Containers[0]
			var env *corev1.EnvVar
			for i := range c.Env {
				if c.Env[i].Name == "GOMEMLIMIT" {
					t.Fatalf("the chart sets GOMEMLIMIT, which would take the whole limit: %+v", c.Env[i])
				}
				if c.Env[i].Name == server.MemoryLimitEnv {
					env = &c.Env[i]
				}
			}
			if tc.wantBytes == 0 {
				if env != nil {
					t.Fatalf("the memory limit set without a limit: %+v", env)
				}
				return
			}
			if env == nil || env.ValueFrom == nil || env.ValueFrom.ResourceFieldRef == nil {
				t.Fatalf("the memory limit not from the container's resources: %+v", env)
			}
			ref := env.ValueFrom.ResourceFieldRef
			if ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != c.Name) {
				t.Errorf("the memory limit from %s of container %q, want limits.memory of its own", ref.Resource, ref.ContainerName)
			}
			// The downward API gives the quantity divided by the divisor,
			// rounded up; without one (1) that is bytes.
			if !ref.Divisor.IsZero() && ref.Divisor.Value() != 1 {
				t.Errorf("divisor %s: the memory limit would not be in bytes", ref.Divisor.String())
			}
			limit := c.Resources.Limits.Memory()
			if limit.Value() != tc.wantBytes {
				t.Fatalf("memory limit %s, want %d bytes", limit, tc.wantBytes)
			}
			// The value the kubelet puts in the environment, as claimbridge
			// serve gives it to the Go runtime.
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), memoryLimitProbe+"=1", "GOMEMLIMIT=", server.MemoryLimitEnv+"="+strconv.FormatInt(limit.Value(), 10))
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != strconv.FormatInt(tc.wantGo, 10) {
				t.Errorf("the Go runtime's memory limit is %s bytes, want %d", got, tc.wantGo)
			}
		})
	}
}
