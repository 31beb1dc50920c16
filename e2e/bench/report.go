package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// human formats an integer with thousands separators.
func human(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "−" + dur(-d)
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3g µs", float64(d)/1e3)
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func ratio(n, d float64) float64 {
	if d == 0 {
		return 0
	}
	return n / d
}

// met says whether q meets an upper (atMost) or lower bound goal.
func met(q, goal float64, atMost bool) string {
	if (atMost && q <= goal) || (!atMost && q >= goal) {
		return "yes"
	}
	return "**no**"
}

func writeWebhook(w io.Writer, o options, targets []*target) {
	noop := targets[0]
	fmt.Fprintf(w, "### Webhook vs a no-op webhook\n\n")
	fmt.Fprintf(w, "Each server is a controller-runtime webhook server on 127.0.0.1 with claimbridge's TLS settings; the load generator "+
		"(`e2e/bench`, in the same process) posts the AdmissionReview of translate's benchmark pod, sized to fit a DGX H100 (7 + 1 GPUs and a NIC), over HTTP/2 with keep-alive, verifying the "+
		"certificate. Fixed rate: %g requests/s for %v per run, open loop, latency measured from each request's due time. Saturation: "+
		"%d requests in flight for %v per run. %d rounds, servers in rotating order, after a %v warm-up each.\n\n",
		o.rate, o.runFor, o.saturation, o.runFor, o.rounds, o.warmup)
	fmt.Fprintln(w, "| server | response | fixed rate: p50 | p99 | max | saturation: p50 | p99 | requests/s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, t := range targets {
		errs := ""
		if e := t.fixed.errors + t.saturated.errors; e > 0 {
			errs = fmt.Sprintf(" (%d errors)", e)
		}
		fmt.Fprintf(w, "| %s | %s%s | %s | %s | %s | %s | %s | %.0f |\n", t.title, t.response, errs,
			dur(t.fixed.quantile(0.5)), dur(t.fixed.quantile(0.99)), dur(t.fixed.max()),
			dur(t.saturated.quantile(0.5)), dur(t.saturated.quantile(0.99)), t.saturated.throughput())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| measurement | claimbridge | no-op | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	// Goals per server and measurement: the fixed-rate p99 without
	// feasibility is held to 1.2× the no-op webhook, with feasibility and
	// the placement proof on (cached) to 1.5×; at saturation 1.5× and 3×.
	// Every pod a new shape (cache off): at least coldGoal requests/s.
	type goalKey struct{ key, what string }
	fixed, saturated := fmt.Sprintf("p99 at %g req/s", o.rate), "p99 at saturation"
	goals := map[goalKey]float64{
		{"translate", fixed}: 1.2, {"translate", saturated}: 1.5,
		{"feasibility", fixed}: 1.5, {"feasibility", saturated}: 3,
	}
	names := map[string]string{"translate": "without feasibility", "feasibility": "with feasibility (" + human(o.webhookNodes) + " nodes, cache on)",
		"placement-off":    "with feasibility, placement proof off (" + human(o.webhookNodes) + " nodes, cache on)",
		"feasibility-cold": "with feasibility (" + human(o.webhookNodes) + " nodes, cache off)"}
	for _, t := range targets[1:] {
		row := func(what string, n, d time.Duration) {
			q := ratio(float64(n), float64(d))
			g, m := "–", "–"
			if goal, ok := goals[goalKey{t.key, what}]; ok {
				g, m = fmt.Sprintf("≤ %g×", goal), met(q, goal, true)
			}
			fmt.Fprintf(w, "| %s, %s | %s | %s | %.2f× | %s | %s |\n", what, names[t.key], dur(n), dur(d), q, g, m)
		}
		row(fixed, t.fixed.quantile(0.99), noop.fixed.quantile(0.99))
		row(saturated, t.saturated.quantile(0.99), noop.saturated.quantile(0.99))
		q := ratio(t.saturated.throughput(), noop.saturated.throughput())
		g, m := "–", "–"
		if t.key == "feasibility-cold" {
			g, m = fmt.Sprintf("≥ %d/s", coldGoal), met(t.saturated.throughput(), coldGoal, false)
		}
		fmt.Fprintf(w, "| throughput at saturation, %s | %.0f/s | %.0f/s | %.2f× | %s | %s |\n", names[t.key], t.saturated.throughput(), noop.saturated.throughput(), q, g, m)
	}
	fmt.Fprintln(w)
	writePlacementCost(w, o, targets)
}

// coldGoal is the throughput, in requests/s on 2 cores, of the webhook
// when every pod is a new shape (every cache off).
const coldGoal = 1000

// writePlacementCost sets the placement proof on against off, the same
// server otherwise: the check's own share of the admission latency.
func writePlacementCost(w io.Writer, o options, targets []*target) {
	var on, off *target
	for _, t := range targets {
		switch t.key {
		case "feasibility":
			on = t
		case "placement-off":
			off = t
		}
	}
	if on == nil || off == nil {
		return
	}
	fmt.Fprintln(w, "| the placement proof's own cost (cache on) | proof on | proof off | ratio |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range []struct {
		what   string
		on, of time.Duration
	}{
		{fmt.Sprintf("p50 at %g req/s", o.rate), on.fixed.quantile(0.5), off.fixed.quantile(0.5)},
		{fmt.Sprintf("p99 at %g req/s", o.rate), on.fixed.quantile(0.99), off.fixed.quantile(0.99)},
		{"p99 at saturation", on.saturated.quantile(0.99), off.saturated.quantile(0.99)},
	} {
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× |\n", r.what, dur(r.on), dur(r.of), ratio(float64(r.on), float64(r.of)))
	}
	fmt.Fprintf(w, "| throughput at saturation | %.0f/s | %.0f/s | %.2f× |\n\n", on.saturated.throughput(), off.saturated.throughput(),
		ratio(on.saturated.throughput(), off.saturated.throughput()))
}

func writeMemory(w io.Writer, o options, published time.Duration, empty, objects, full, limited memSample) {
	fmt.Fprintf(w, "### Memory with %s nodes × 16 devices\n\n", human(o.nodes))
	fmt.Fprintf(w, "%s Nodes (with status) and %s ResourceSlices holding %s devices (8 H100 GPUs and 8 RDMA NICs per node) published "+
		"to the control plane in %v. claimbridge is the built binary (`claimbridge serve`, cert-manager mode) in its own process, "+
		"measured once its inventory holds every node and two pods were admitted (the first builds the inventory snapshot and "+
		"runs the allocator), 2 s later: RSS and peak RSS from /proc, then the live heap after a GC the measurement forces "+
		"(pprof's `heap?gc=1`; from `GODEBUG=gctrace=1`, MiB resolution). The same binary was measured before the fleet was published. The baseline, the informer objects' own "+
		"size, is the Go heap that another process holds after listing the same Nodes, ResourceSlices and DeviceClasses with "+
		"the same client (pages of 500, as an informer) and two full GCs.\n\n",
		human(objects.Nodes), human(objects.Slices), human(objects.Devices), published.Round(time.Second))
	fmt.Fprintln(w, "| process | live heap | RSS | peak RSS |")
	fmt.Fprintln(w, "|---|---|---|---|")
	fmt.Fprintf(w, "| claimbridge, empty fleet | %s | %s | %s |\n", mib(empty.HeapAlloc), mib(empty.RSS), mib(empty.HWM))
	fmt.Fprintf(w, "| claimbridge, %s nodes (every node in the inventory %.1f s after start, first pod translated after %.1f s, in %s) | %s | %s | %s |\n",
		human(o.nodes), full.SyncSeconds, full.TranslatingSeconds, dur(time.Duration(full.FirstSeconds*float64(time.Second))), mib(full.HeapAlloc), mib(full.RSS), mib(full.HWM))
	fmt.Fprintf(w, "| claimbridge, %s nodes, a container memory limit of the live heap above and a quarter, plus 64 MiB (%s), which the chart passes and serve gives the Go runtime "+
		"less 64 MiB (%d GCs to the measurement; %d without the limit) | %s | %s | %s |\n",
		human(o.nodes), mib(full.HeapAlloc+full.HeapAlloc/4+64<<20), limited.GCs, full.GCs, mib(limited.HeapAlloc), mib(limited.RSS), mib(limited.HWM))
	fmt.Fprintf(w, "| the listed objects (protobuf encoding: %s) | %s held by the objects | – | – |\n", mib(objects.ObjectsProto), mib(objects.ObjectsHeap))
	fmt.Fprintln(w)
	writeMemoryRatios(w, empty, "empty fleet", full, objects)
	q := ratio(float64(limited.RSS), float64(objects.ObjectsHeap))
	fmt.Fprintf(w, "| webhook RSS with that limit vs the objects' heap | %s | %s | %.2f× | – | – |\n",
		mib(limited.RSS), mib(objects.ObjectsHeap), q)
	fmt.Fprintln(w)
}

// memoryGoal: claimbridge's memory at most the heap of the objects its
// informers list (issue 24): its transforms keep less than the objects.
const memoryGoal = 1.0

// writeMemoryRatios compares a server's memory with the objects' heap, and
// its growth from the server base (named so) with it; the caller ends the
// table.
func writeMemoryRatios(w io.Writer, base memSample, baseName string, full, objects memSample) {
	fmt.Fprintln(w, "| measurement | claimbridge | objects | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	obj := float64(objects.ObjectsHeap)
	q := ratio(float64(full.RSS), obj)
	fmt.Fprintf(w, "| webhook RSS with the inventory vs the objects' heap | %s | %s | %.2f× | ≤ %g× | %s |\n", mib(full.RSS), mib(objects.ObjectsHeap), q, memoryGoal, met(q, memoryGoal, true))
	q = ratio(float64(full.HeapAlloc), obj)
	fmt.Fprintf(w, "| webhook live heap vs the objects' heap | %s | %s | %.2f× | ≤ %g× | %s |\n", mib(full.HeapAlloc), mib(objects.ObjectsHeap), q, memoryGoal, met(q, memoryGoal, true))
	q = ratio(float64(full.RSS)-float64(base.RSS), obj)
	fmt.Fprintf(w, "| webhook RSS growth (with − %s) vs the objects' heap | %s | %s | %.2f× | – | – |\n", baseName, mib(full.RSS-min(full.RSS, base.RSS)), mib(objects.ObjectsHeap), q)
	q = ratio(float64(full.HeapAlloc)-float64(base.HeapAlloc), obj)
	fmt.Fprintf(w, "| webhook live heap growth (with − %s) vs the objects' heap | %s | %s | %.2f× | – | – |\n", baseName, mib(full.HeapAlloc-min(full.HeapAlloc, base.HeapAlloc)), mib(objects.ObjectsHeap), q)
	q = ratio(float64(full.HWM), obj)
	fmt.Fprintf(w, "| webhook peak RSS vs the objects' heap | %s | %s | %.2f× | – | – |\n", mib(full.HWM), mib(objects.ObjectsHeap), q)
}

// writeMemoryPods is the memory with pods bound to the fleet's nodes:
// fleet is the server and objects without them.
func writeMemoryPods(w io.Writer, o options, published time.Duration, fleet, fleetObjects, full, objects memSample) {
	fmt.Fprintf(w, "### Memory with %s nodes × 16 devices and %s pods\n\n", human(o.nodes), human(objects.Pods))
	fmt.Fprintf(w, "The same fleet with %s pods created in %v, bound to its nodes at creation (a Deployment's pod each: labels with a "+
		"pod-template-hash, annotations, an image, arguments, environment, ports, a readiness probe, CPU and memory requests; "+
		"no device), measured the same way with a new `claimbridge serve` process. The baseline lists the pods too.\n\n",
		human(objects.Pods), published.Round(time.Second))
	fmt.Fprintln(w, "| process | live heap | RSS | peak RSS |")
	fmt.Fprintln(w, "|---|---|---|---|")
	fmt.Fprintf(w, "| claimbridge, %s nodes, %s pods (first pod translated %.1f s after start, in %s) | %s | %s | %s |\n",
		human(o.nodes), human(objects.Pods), full.TranslatingSeconds, dur(time.Duration(full.FirstSeconds*float64(time.Second))), mib(full.HeapAlloc), mib(full.RSS), mib(full.HWM))
	fmt.Fprintf(w, "| the listed objects with the pods (protobuf encoding: %s) | %s held by the objects | – | – |\n", mib(objects.ObjectsProto), mib(objects.ObjectsHeap))
	fmt.Fprintf(w, "| the pods alone (difference of the two listings) | %s | – | – |\n", mib(objects.ObjectsHeap-min(objects.ObjectsHeap, fleetObjects.ObjectsHeap)))
	fmt.Fprintln(w)
	writeMemoryRatios(w, fleet, "fleet without pods", full, objects)
	pods := float64(objects.ObjectsHeap) - float64(fleetObjects.ObjectsHeap)
	q := ratio(float64(full.HeapAlloc)-float64(fleet.HeapAlloc), pods)
	fmt.Fprintf(w, "| webhook live heap growth from the pods vs the pods' heap | %s | %s | %.2f× | – | – |\n\n",
		mib(full.HeapAlloc-min(full.HeapAlloc, fleet.HeapAlloc)), mib(uint64(max(pods, 0))), q)
}

func writeAPIServer(w io.Writer, o options, r apiserverResult) {
	fmt.Fprintf(w, "### Through the real apiserver\n\n")
	fmt.Fprintf(w, "%s legacy pods (`nvidia.com/gpu: 1`, GFD product selector) created in each of seven namespaces: one without "+
		"the mode label (the webhook is never called); one without it whose pods are written by hand as the translation writes "+
		"them (the same claim entry and container claim, no `nvidia.com/gpu`, no GFD selector, none of claimbridge's annotations), "+
		"referring to a copy of the translation's ResourceClaimTemplate created beforehand, so that kube-controller-manager "+
		"creates a ResourceClaim for each (enforce's floor: what a pod with a claim costs with no webhook); three that other webhook configurations send to a no-op webhook served "+
		"in the bench process with claimbridge's certificate and TLS settings, which decodes the pod and allows it with nothing "+
		"(kube-apiserver's own cost of a webhook call), with the warning claimbridge gives an audit pod, or with the annotation "+
		"patch claimbridge gives an audit pod (each part of the audit response priced alone); one in `audit` mode (the webhook "+
		"translates and checks, the pod is admitted with its decision annotations and a warning) and one in `enforce` mode "+
		"(translated: the pod refers to the template and kube-controller-manager creates its ResourceClaim), both served by the "+
		"`claimbridge serve` process above (%s-node fleet) behind the chart's MutatingWebhookConfiguration. %d batches of %d pods "+
		"per namespace, namespaces in rotating order, %d concurrent clients (client QPS 500, burst 1000). The pods carry a "+
		"scheduling gate, so kube-scheduler does not compete for the CPUs (claimbridge translates gated pods as any other).\n\n",
		human(o.pods), human(o.nodes), r.batches, r.batchSize, o.clients)
	fmt.Fprintln(w, "| namespace | pods | with a claim | claimbridge's Events | created/s | create p50 | create p99 | create p99.9 | create max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	rows := []struct {
		name string
		cr   creation
	}{{"no mode label (webhook not called)", r.legacy}, {"hand-written claim, no mode label (enforce's floor)", r.floor}, {"no-op webhook (called, allows: no patch, no warning)", r.noop},
		{"no-op webhook answering with audit's warning", r.noopWarn}, {"no-op webhook answering with audit's annotation patch", r.noopPatch},
		{"audit (webhook called, decision annotations and a warning)", r.audit}, {"enforce (webhook, pod translated)", r.enforce}}
	for _, c := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %s | %.0f | %s | %s | %s | %s |\n", c.name, len(c.cr.latency.latencies), c.cr.translated, eventsOf(c.cr),
			c.cr.latency.throughput(), dur(c.cr.latency.quantile(0.5)), dur(c.cr.latency.quantile(0.99)), dur(c.cr.latency.quantile(0.999)), dur(c.cr.latency.max()))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| measurement | with webhook | without | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	base, floor := r.legacy.latency.throughput(), r.floor.latency.throughput()
	q := ratio(r.enforce.latency.throughput(), base)
	fmt.Fprintf(w, "| pod creation throughput, enforce | %.0f/s | %.0f/s | %.2f× | ≥ %g× | %s |\n", r.enforce.latency.throughput(), base, q,
		throughputGoal, met(q, throughputGoal, false))
	q = ratio(r.audit.latency.throughput(), base)
	fmt.Fprintf(w, "| pod creation throughput, audit | %.0f/s | %.0f/s | %.2f× | – | – |\n", r.audit.latency.throughput(), base, q)
	q = ratio(floor, base)
	fmt.Fprintf(w, "| pod creation throughput, enforce's floor (hand-written claim, no webhook) | %.0f/s | %.0f/s | %.2f× | – | – |\n", floor, base, q)
	q = ratio(r.enforce.latency.throughput(), floor)
	fmt.Fprintf(w, "| pod creation throughput, enforce vs its floor | %.0f/s | %.0f/s (floor) | %.2f× | – | – |\n\n", r.enforce.latency.throughput(), floor, q)
	fmt.Fprintln(w, "CPU time per pod created, by process, during each namespace's batches (from /proc; an enforce batch ends "+
		"once kube-controller-manager has created the ResourceClaims of its pods, so that the next batch is not charged for them; "+
		"other asynchronous work, such as a process's garbage collection or kube-scheduler's periodic passes over the gated pods, "+
		"lands in whichever batch runs):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| process | no mode label | hand-written claim (floor) | no-op webhook | no-op, audit's warning | no-op, audit's patch | audit | enforce |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	names := map[string]bool{}
	for _, c := range rows {
		for n := range c.cr.cpu {
			names[n] = true
		}
	}
	perPod := func(cr creation, name string) string {
		n := len(cr.latency.latencies)
		if n == 0 {
			return "–"
		}
		return dur(cr.cpu[name] / time.Duration(n))
	}
	total := func(cr creation) time.Duration {
		var t time.Duration
		for _, v := range cr.cpu {
			t += v
		}
		return t
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", n, perPod(r.legacy, n), perPod(r.floor, n), perPod(r.noop, n), perPod(r.noopWarn, n), perPod(r.noopPatch, n), perPod(r.audit, n), perPod(r.enforce, n))
	}
	tp := func(cr creation) string {
		if len(cr.latency.latencies) == 0 {
			return "–"
		}
		return dur(total(cr) / time.Duration(len(cr.latency.latencies)))
	}
	fmt.Fprintf(w, "| all | %s | %s | %s | %s | %s | %s | %s |\n\n", tp(r.legacy), tp(r.floor), tp(r.noop), tp(r.noopWarn), tp(r.noopPatch), tp(r.audit), tp(r.enforce))
	writeCPUPerPod(w, r)
	fmt.Fprintln(w, "Admission latency histograms (requests per bucket) of the audit and enforce batches: kube-apiserver's "+
		"`apiserver_admission_webhook_admission_duration_seconds` (the call as the apiserver sees it), claimbridge's "+
		"`controller_runtime_webhook_latency_seconds` (the request inside the server) and "+
		"`claimbridge_feasibility_duration_seconds` (the allocator check, including a snapshot rebuild when the inventory changed).")
	fmt.Fprintln(w)
	writeHistograms(w, "kube-apiserver", r.audit.apiserver, r.enforce.apiserver)
	writeHistograms(w, "claimbridge", r.audit.self, r.enforce.self)
	writeHistograms(w, "feasibility check", r.audit.feasibility, r.enforce.feasibility)
	writeStages(w, r)
	writeTail(w, o, r)
}

// CPU per pod goals (issue 24): the webhook's CPU per admitted pod at most
// cpuWebhookGoal of kube-apiserver's per pod without the webhook, and
// kube-apiserver's own per pod in an audit namespace (the webhook called,
// a small annotation patch) at most cpuAuditGoal of its per pod without.
const (
	cpuWebhookGoal = 0.3
	cpuAuditGoal   = 1.3
)

// throughputGoal: pod creation in an enforce namespace at least this
// fraction of the rate without the webhook.
const throughputGoal = 0.6

// writeCPUPerPod sets the CPU time per pod of claimbridge and of
// kube-apiserver against kube-apiserver's without the webhook, all from
// /proc in the same run: the comparison two shared cores can make, where
// throughput cannot.
func writeCPUPerPod(w io.Writer, r apiserverResult) {
	perPod := func(cr creation, name string) time.Duration {
		if n := len(cr.latency.latencies); n > 0 {
			return cr.cpu[name] / time.Duration(n)
		}
		return 0
	}
	const self, apiserver = "claimbridge", "kube-apiserver"
	base := perPod(r.legacy, apiserver)
	fmt.Fprintf(w, "What kube-apiserver receives from the webhook per pod (its cost besides the call: decoding the response, "+
		"applying the patch with a JSON round trip of the pod, recording the warnings): audit %s, enforce %s.\n\n", r.auditResponse, r.enforceResponse)
	fmt.Fprintln(w, "| CPU time per pod | process | kube-apiserver without webhook | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, row := range []struct {
		what string
		t    time.Duration
		goal float64
	}{
		{"claimbridge, enforce (translated)", perPod(r.enforce, self), cpuWebhookGoal},
		{"claimbridge, audit (annotations only)", perPod(r.audit, self), cpuWebhookGoal},
		{"kube-apiserver, no-op webhook namespace (the cost of any webhook call)", perPod(r.noop, apiserver), 0},
		{"kube-apiserver, no-op webhook answering with audit's warning", perPod(r.noopWarn, apiserver), 0},
		{"kube-apiserver, no-op webhook answering with audit's annotation patch", perPod(r.noopPatch, apiserver), 0},
		{"kube-apiserver, audit namespace (webhook called)", perPod(r.audit, apiserver), cpuAuditGoal},
		{"kube-apiserver, enforce namespace (webhook called, pod translated)", perPod(r.enforce, apiserver), 0},
		{"kube-apiserver, enforce's floor (hand-written claim, no webhook)", perPod(r.floor, apiserver), 0},
	} {
		q := ratio(float64(row.t), float64(base))
		g, m := "–", "–"
		if row.goal > 0 {
			g, m = fmt.Sprintf("≤ %g×", row.goal), met(q, row.goal, true)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %s | %s |\n", row.what, dur(row.t), dur(base), q, g, m)
	}
	fmt.Fprintln(w)
	writeFloor(w, r)
}

// writeFloor sets enforce against its floor, process by process: what the
// webhook adds to a pod that ends with a claim anyway.
func writeFloor(w io.Writer, r apiserverResult) {
	perPod := func(cr creation, name string) time.Duration {
		if n := len(cr.latency.latencies); n > 0 {
			return cr.cpu[name] / time.Duration(n)
		}
		return 0
	}
	all := func(cr creation) time.Duration {
		var t time.Duration
		for name := range cr.cpu {
			t += perPod(cr, name)
		}
		return t
	}
	fmt.Fprintln(w, "| CPU time per pod, enforce vs its floor (the same pod and claim, hand-written, no webhook) | enforce | floor | enforce − floor | ratio |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "claimbridge"} {
		e, f := perPod(r.enforce, name), perPod(r.floor, name)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f× |\n", name, dur(e), dur(f), dur(e-f), ratio(float64(e), float64(f)))
	}
	e, f := all(r.enforce), all(r.floor)
	fmt.Fprintf(w, "| all processes | %s | %s | %s | %.2f× |\n\n", dur(e), dur(f), dur(e-f), ratio(float64(e), float64(f)))
	writeNetOfIdle(w, r)
}

// writeNetOfIdle is the CPU time per pod less what each process spends
// idle over as long as the namespace's batches took: an enforce or floor
// batch lasts until kube-controller-manager has created its claims, at
// its client's rate, seconds after the pods exist, and the raw figures
// charge it every process's background work meanwhile.
func writeNetOfIdle(w io.Writer, r apiserverResult) {
	net := func(cr creation, name string) time.Duration {
		n := len(cr.latency.latencies)
		if n == 0 {
			return 0
		}
		idle := time.Duration(r.idle[name] * float64(cr.wall))
		return (cr.cpu[name] - idle) / time.Duration(n)
	}
	meanBatch := func(cr creation) string {
		if n := len(cr.latency.latencies); n > 0 && r.batches > 0 {
			return dur(cr.wall / time.Duration(r.batches))
		}
		return "–"
	}
	fmt.Fprintf(w, "CPU time per pod net of each process's idle rate (its CPU per second over %s with nothing created, before the "+
		"batches) times the length of the namespace's batches (mean batch: no mode label %s, floor %s, audit %s, enforce %s):\n\n",
		"3 s", meanBatch(r.legacy), meanBatch(r.floor), meanBatch(r.audit), meanBatch(r.enforce))
	fmt.Fprintln(w, "| process | idle, per second | no mode label | hand-written claim (floor) | audit | enforce | enforce vs floor | enforce vs no mode label |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "claimbridge"} {
		e, f, l := net(r.enforce, name), net(r.floor, name), net(r.legacy, name)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.2f× | %.2f× |\n", name, dur(time.Duration(r.idle[name]*float64(time.Second))),
			dur(l), dur(f), dur(net(r.audit, name)), dur(e), ratio(float64(e), float64(f)), ratio(float64(e), float64(l)))
	}
	fmt.Fprintln(w)
	created := func(cr creation, name string) time.Duration {
		if n := len(cr.latency.latencies); n > 0 {
			return cr.created[name] / time.Duration(n)
		}
		return 0
	}
	fmt.Fprintln(w, "CPU time per pod while the pods were created (each batch's creates alone: an enforce or floor batch's claims come after):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| process | no mode label | hand-written claim (floor) | audit | enforce | enforce vs floor | enforce vs no mode label |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "claimbridge"} {
		e, f, l := created(r.enforce, name), created(r.floor, name), created(r.legacy, name)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f× | %.2f× |\n", name, dur(l), dur(f), dur(created(r.audit, name)), dur(e),
			ratio(float64(e), float64(f)), ratio(float64(e), float64(l)))
	}
	fmt.Fprintln(w)
	e, l := net(r.enforce, "claimbridge"), net(r.legacy, "kube-apiserver")
	fmt.Fprintf(w, "claimbridge's CPU per enforce pod net of its idle rate vs kube-apiserver's per pod without the webhook, both net: %s vs %s, %.2f× (goal ≤ %g×: %s).\n\n",
		dur(e), dur(l), ratio(float64(e), float64(l)), cpuWebhookGoal, met(ratio(float64(e), float64(l)), cpuWebhookGoal, true))
}

// eventsOf is a namespace's count of claimbridge's Events, with its reasons.
func eventsOf(cr creation) string {
	if cr.events == 0 {
		return "0"
	}
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(cr.eventReasons)) {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, cr.eventReasons[r]))
	}
	return fmt.Sprintf("%d (%s)", cr.events, strings.Join(reasons, ", "))
}

func (s responseShape) String() string {
	return fmt.Sprintf("%d bytes (a patch of %d operations, %d bytes; %d warnings, %d bytes)", s.bytes, s.patchOps, s.patchBytes, s.warnings, s.warningBytes)
}

// writeHistograms writes the audit and enforce histograms of one metric side by side.
func writeHistograms(w io.Writer, name string, audit, enforce histogram) {
	h := audit
	if len(h.bounds) == 0 {
		h = enforce
	}
	if len(h.bounds) == 0 {
		fmt.Fprintf(w, "%s: no samples\n\n", name)
		return
	}
	fmt.Fprintf(w, "| %s: latency ≤ | audit | enforce |\n|---|---|---|\n", name)
	count := func(x histogram, i int) float64 {
		if i >= len(x.counts) {
			return 0
		}
		if i == 0 {
			return x.counts[0]
		}
		return x.counts[i] - x.counts[i-1]
	}
	for i, b := range h.bounds {
		a, e := count(audit, i), count(enforce, i)
		if a == 0 && e == 0 {
			continue
		}
		bound := b
		if v, err := strconv.ParseFloat(b, 64); err == nil {
			bound = dur(time.Duration(v * float64(time.Second)))
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f |\n", bound, a, e)
	}
	fmt.Fprintln(w)
}
