package server

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestTheGoRuntimesLimitLeavesRoomBelowTheContainers(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for name, tc := range map[string]struct {
		env     map[string]string
		want    int64
		wantErr string
	}{
		"512Mi: 64Mi for what is not heap":   {env: map[string]string{MemoryLimitEnv: "536870912"}, want: 448 << 20},
		"1536Mi":                             {env: map[string]string{MemoryLimitEnv: "1610612736"}, want: 1472 << 20},
		"a small limit keeps three quarters": {env: map[string]string{MemoryLimitEnv: "134217728"}, want: 96 << 20},
		"no limit, none set":                 {env: map[string]string{}, want: 0},
		"GOMEMLIMIT set by hand wins":        {env: map[string]string{"GOMEMLIMIT": "300MiB", MemoryLimitEnv: "536870912"}, want: -1},
		"not a number is an error naming it": {env: map[string]string{MemoryLimitEnv: "512Mi"}, wantErr: MemoryLimitEnv},
		"a limit of zero is an error":        {env: map[string]string{MemoryLimitEnv: "0"}, wantErr: "in bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			got, _, err := ApplyMemoryLimit(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == -1 {
				// The runtime read GOMEMLIMIT at start; the container's limit changes nothing.
				if got != math.MaxInt64 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
					t.Errorf("with GOMEMLIMIT set, the limit was changed to %d", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("limit %d, want %d", got, tc.want)
			}
			if tc.want > 0 && debug.SetMemoryLimit(-1) != tc.want {
				t.Errorf("the runtime's limit is %d, want %d", debug.SetMemoryLimit(-1), tc.want)
			}
		})
	}
}
