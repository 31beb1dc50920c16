// Command bench measures claimbridge end to end and writes Markdown to
// stdout (progress goes to stderr):
//
//   - webhook: claimbridge's admission handler against a no-op webhook, both
//     served by controller-runtime webhook servers over TLS on loopback, at a
//     fixed request rate and at saturation, from a Go load generator;
//   - cluster: on a real control plane (the e2e harness) with a published
//     fleet of 5,000 nodes × 16 devices, the memory of claimbridge's server
//     against the size of the objects its informers hold (the fleet alone,
//     then with 50,000 pods bound to its nodes), then pod creation through
//     kube-apiserver with and without the webhook, and the CPU time each
//     process spends per pod.
//
// Every figure is a ratio against a baseline measured in the same run; the
// command never fails on a missed goal. Each part stops by itself: the whole
// run is bounded by -timeout.
//
//	cd e2e && go run ./bench                 # both parts (make bench-e2e)
//	cd e2e && go run ./bench -parts webhook  # no control plane needed
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/server"
)

type options struct {
	parts []string
	// webhook
	webhookNodes, saturation, rounds int
	rate                             float64
	runFor, warmup                   time.Duration
	cpuProfile                       string
	targets                          []string
	// cluster
	nodes, pods, batch, clients int
	memoryPods                  int
	timeout                     time.Duration
	memProfile                  string
	serveProfile                string
	apiserverProfile            string
	// serveBin: a claimbridge binary to measure instead of this tree's
	serveBin string
	// probe subprocess
	probe, kubeconfig string
}

var started = time.Now()

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	var o options
	parts := flag.String("parts", "webhook,cluster", "parts to run: webhook, cluster")
	flag.IntVar(&o.webhookNodes, "webhook-nodes", 1000, "webhook: nodes of the synthetic fleet the feasibility check runs on")
	flag.Float64Var(&o.rate, "rate", 200, "webhook: fixed request rate (requests per second)")
	flag.IntVar(&o.saturation, "saturation", 16, "webhook: requests in flight at saturation")
	flag.DurationVar(&o.runFor, "run-for", 6*time.Second, "webhook: length of one run")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "webhook: warm-up per server")
	flag.IntVar(&o.rounds, "rounds", 3, "webhook: rounds; each runs every server once per load, in rotating order")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "webhook: write a CPU profile of the loaded runs to this file")
	targets := flag.String("targets", "", "webhook: claimbridge servers to load besides the no-op one (translate, placement-off, feasibility, feasibility-cold); default all")
	flag.IntVar(&o.nodes, "nodes", 5000, "cluster: nodes of the published fleet (16 devices each)")
	flag.IntVar(&o.pods, "pods", 1000, "cluster: pods created per namespace")
	flag.IntVar(&o.memoryPods, "memory-pods", -1, "cluster: pods bound to the fleet's nodes for the memory measurement with pods; -1: 10 per node (50,000 with 5,000 nodes)")
	flag.IntVar(&o.batch, "batch", 125, "cluster: pods per batch; batches alternate between the namespaces")
	flag.IntVar(&o.clients, "clients", 8, "cluster: concurrent clients creating pods")
	flag.DurationVar(&o.timeout, "timeout", 25*time.Minute, "bound of the whole run")
	flag.StringVar(&o.serveBin, "serve-bin", "", "cluster: measure this claimbridge binary (another build, e.g. an earlier release's) instead of building this tree's")
	flag.StringVar(&o.serveProfile, "serve-cpuprofile", "", "cluster: during each batch of the apiserver part, a CPU profile of claimbridge serve (1 s, from its --pprof-bind-address) to <this>-<namespace kind>-<batch>.pprof; merge them with go tool pprof -top <this>-audit-*.pprof")
	flag.StringVar(&o.apiserverProfile, "apiserver-cpuprofile", "", "cluster: during each batch of the apiserver part, a CPU profile of kube-apiserver (1 s, from its /debug/pprof) to <this>-<namespace kind>-<batch>.pprof")
	logFile := flag.String("serve-log", "", "cluster: append the log of every claimbridge serve process (JSON, info level: slow admissions and slow snapshot updates among it) to this file")
	flag.StringVar(&o.memProfile, "memprofile", "", "cluster: write a heap profile of claimbridge's inventory (its informers and a snapshot, in a process of its own) with the fleet and its pods to this file")
	flag.StringVar(&o.probe, "probe", "", "internal: run a memory probe (objects) and print JSON")
	flag.StringVar(&o.kubeconfig, "probe-kubeconfig", "", "internal: probe's kubeconfig")
	flag.Parse()
	if o.memoryPods < 0 {
		o.memoryPods = 10 * o.nodes
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer func() { _ = f.Close() }()
		serveLog = f
	}
	// The handlers and the allocator log through controller-runtime's
	// logger; the benchmark discards it (as serve does below its level).
	crlog.SetLogger(logr.Discard())
	o.parts = strings.Split(*parts, ",")
	if *targets != "" {
		o.targets = strings.Split(*targets, ",")
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, o.timeout)
	defer cancelTimeout()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		cancelTimeout()
		cancel()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.probe != "" {
		return runProbe(ctx, o)
	}
	out := os.Stdout
	writeHeader(out, o)
	if slices.Contains(o.parts, "webhook") {
		if len(o.parts) == 1 {
			if err := benchWebhook(ctx, out, o); err != nil {
				return fmt.Errorf("webhook: %w", err)
			}
		} else {
			// Its own process: claimbridge's metrics register globally, and
			// the cluster part runs the real server.
			md, err := self(ctx, append(os.Args[1:], "-parts=webhook", "-header=false")...)
			if err != nil {
				return fmt.Errorf("webhook: %w", err)
			}
			if _, err := out.Write(md); err != nil {
				return err
			}
		}
	}
	if slices.Contains(o.parts, "cluster") {
		if err := benchCluster(ctx, out, o); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	return nil
}

var header = flag.Bool("header", true, "write the header")

func writeHeader(w io.Writer, o options) {
	if !*header {
		return
	}
	load, _ := os.ReadFile("/proc/loadavg") // other work on the machine skews every figure
	fmt.Fprintf(w, "<!-- e2e/bench %s, GOMAXPROCS %d, %s, %s, load average at start %s -->\n\n", runtime.Version(), runtime.GOMAXPROCS(0), cpuModel(),
		time.Now().UTC().Format("2006-01-02"), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// self runs this program again with args and returns its stdout; its stderr
// passes through.
func self(ctx context.Context, args ...string) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", exe, strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

func runProbe(ctx context.Context, o options) error {
	var (
		s   memSample
		err error
	)
	switch o.probe {
	case "objects":
		s, err = probeObjects(ctx, o.kubeconfig)
	case "inventory":
		s, err = probeInventory(ctx, o.kubeconfig, o.memProfile)
	default:
		err = fmt.Errorf("unknown probe %q", o.probe)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}

func probe(ctx context.Context, args ...string) (memSample, error) {
	out, err := self(ctx, args...)
	if err != nil {
		return memSample{}, err
	}
	var s memSample
	if err := json.Unmarshal(out, &s); err != nil {
		return memSample{}, fmt.Errorf("probe output %q: %w", out, err)
	}
	return s, nil
}

// benchCluster starts a control plane, measures memory around publishing the
// fleet, then pod creation through the apiserver.
func benchCluster(ctx context.Context, w io.Writer, o options) error {
	progress("cluster: starting")
	c, err := cluster.New(ctx, cluster.Options{Progress: io.Discard, Profiling: o.apiserverProfile != ""})
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer c.Stop()
	if _, err := c.CreateNamespace(ctx, ownNamespace, "", nil); err != nil {
		return err
	}
	memNS, err := c.CreateNamespace(ctx, "", "bench-memory-", map[string]string{cluster.ModeLabel: "enforce"})
	if err != nil {
		return err
	}
	certDir, err := issueCert(c)
	if err != nil {
		return err
	}
	bin := o.serveBin
	if bin == "" {
		if bin, err = buildClaimbridge(ctx, c.Dir); err != nil {
			return err
		}
	}

	progress("memory: claimbridge with an empty fleet")
	srv, err := startServe(ctx, bin, c.Kubeconfig, certDir)
	if err != nil {
		return err
	}
	empty, err := srv.measure(ctx, memNS.Name, 0, 0)
	srv.stop()
	if err != nil {
		return err
	}
	published, err := publishFleet(ctx, c, o.nodes)
	if err != nil {
		return err
	}
	progress("memory: the informer objects")
	objects, err := probe(ctx, "-probe=objects", "-probe-kubeconfig="+c.Kubeconfig)
	if err != nil {
		return err
	}
	progress("memory: claimbridge with %d nodes", o.nodes)
	if srv, err = startServe(ctx, bin, c.Kubeconfig, certDir); err != nil {
		return err
	}
	full, err := srv.measure(ctx, memNS.Name, o.nodes, 0)
	srv.stop()
	if err != nil {
		return err
	}
	// The chart passes the container's memory limit, and serve gives the
	// Go runtime that limit less 64 MiB: the same fleet with a tight
	// container limit, 64 MiB and a quarter over the live heap just
	// measured (the runtime's limit a quarter over it).
	limit := full.HeapAlloc + full.HeapAlloc/4
	progress("memory: claimbridge with %d nodes, the runtime's limit %s", o.nodes, mib(limit))
	if srv, err = startServe(ctx, bin, c.Kubeconfig, certDir, fmt.Sprintf("%s=%d", server.MemoryLimitEnv, limit+64<<20)); err != nil {
		return err
	}
	limited, err := srv.measure(ctx, memNS.Name, o.nodes, 0)
	srv.stop()
	if err != nil {
		return err
	}
	// The same fleet with pods bound to its nodes: a fresh server, so that
	// its peak RSS is its own.
	podsPublished, err := publishFleetPods(ctx, c, o.nodes, o.memoryPods)
	if err != nil {
		return err
	}
	progress("memory: the informer objects with %d pods", o.memoryPods)
	objectsPods, err := probe(ctx, "-probe=objects", "-probe-kubeconfig="+c.Kubeconfig)
	if err != nil {
		return err
	}
	progress("memory: claimbridge with %d nodes and %d pods", o.nodes, o.memoryPods)
	if srv, err = startServe(ctx, bin, c.Kubeconfig, certDir); err != nil {
		return err
	}
	defer srv.stop()
	withPods, err := srv.measure(ctx, memNS.Name, o.nodes, o.memoryPods)
	if err != nil {
		return err
	}
	if o.memProfile != "" {
		progress("memory: heap profile of the inventory")
		if _, err := probe(ctx, "-probe=inventory", "-probe-kubeconfig="+c.Kubeconfig, "-memprofile="+o.memProfile); err != nil {
			return err
		}
	}
	writeMemory(w, o, published, empty, objects, full, limited)
	writeMemoryPods(w, o, podsPublished, full, objects, withPods, objectsPods)

	// The same server, now behind the chart's webhook configuration.
	if err := installWebhook(ctx, c, srv.webhookURL, certDir); err != nil {
		return err
	}
	res, err := benchAPIServer(ctx, c, srv, o)
	if err != nil {
		return err
	}
	writeAPIServer(w, o, res)
	return nil
}

// publishFleetPods creates n pods bound to the fleet's nodes in a
// namespace the webhook never sees.
func publishFleetPods(ctx context.Context, c *cluster.Cluster, nodes, n int) (time.Duration, error) {
	ns, err := c.CreateNamespace(ctx, "", "bench-fleet-pods-", nil)
	if err != nil {
		return 0, err
	}
	pods := fleetPods(ns.Name, dgxFleet(nodes).Nodes, n)
	progress("cluster: creating %d pods bound to the fleet's nodes", len(pods))
	t := time.Now()
	if err := publishPods(ctx, c.RESTConfig(), pods, 16); err != nil {
		return 0, err
	}
	progress("cluster: created in %v", time.Since(t).Round(time.Second))
	return time.Since(t), nil
}

func publishFleet(ctx context.Context, c *cluster.Cluster, n int) (time.Duration, error) {
	fleet := dgxFleet(n)
	progress("cluster: publishing %d nodes, %d slices, %d devices", len(fleet.Nodes), len(fleet.Slices), devices(fleet.Slices))
	t := time.Now()
	if err := publish(ctx, c.RESTConfig(), fleet, 16); err != nil {
		return 0, err
	}
	progress("cluster: published in %v", time.Since(t).Round(time.Second))
	return time.Since(t), nil
}
