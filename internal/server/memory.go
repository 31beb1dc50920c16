package server

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryLimitEnv holds the container's memory limit in bytes (the chart sets it from
// limits.memory with the downward API).
const MemoryLimitEnv = "CLAIMBRIDGE_MEMORY_LIMIT"

// memoryHeadroom is what the Go runtime's soft limit leaves of the container's limit for
// what is not Go heap: the executable's pages (about 55 MiB of RssFile measured), goroutine
// stacks and the runtime's own structures. At most a quarter of a small limit.
const memoryHeadroom = 64 << 20

// ApplyMemoryLimit sets the Go runtime's soft memory limit from the container's limit: the
// collector then works harder as the heap nears it instead of growing into the kernel's
// reclaim of the executable's pages and the OOM killer. GOMEMLIMIT, when set, wins: the
// runtime has read it. It returns the limit set (0: none) and what it comes from.
func ApplyMemoryLimit(getenv func(string) string) (int64, string, error) {
	if v := getenv("GOMEMLIMIT"); v != "" && v != "off" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil
	}
	v := strings.TrimSpace(getenv(MemoryLimitEnv))
	if v == "" {
		return 0, "", nil
	}
	limit, err := strconv.ParseInt(v, 10, 64)
	if err != nil || limit <= 0 {
		return 0, "", fmt.Errorf("%s=%q: want the container's memory limit in bytes", MemoryLimitEnv, v)
	}
	soft := limit - min(memoryHeadroom, limit/4)
	debug.SetMemoryLimit(soft)
	return soft, fmt.Sprintf("%s %d bytes less %d MiB for what is not Go heap", MemoryLimitEnv, limit, (limit-soft)>>20), nil
}
