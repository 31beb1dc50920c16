package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
	"github.com/claimbridge/claimbridge/internal/live"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/internal/rehearsal"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/livereport"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// errDisagrees: the switch bound some workload otherwise than the forecast said.
var errDisagrees = errors.New("a workload was bound otherwise than forecast")

// switchOptions are devcluster switch's flags.
type switchOptions struct {
	kubeconfig, gfdLabels string
	settle, timeout       time.Duration
	out                   io.Writer
}

// runSwitch is `devcluster switch`: the switch to DRA of a running dev cluster, as the
// rehearsal does it on a control plane of its own. It forecasts the switch from the cluster's
// workloads and nodes (claimbridge audit --forecast --kubeconfig), moves every node the
// forecast switches to the DRA stack (its labels and allocatable as after the switch, the
// ResourceSlices the drivers will publish, their DeviceClasses), recreates every pod of the
// workloads at once (as a rollout of the whole cluster does), waits until kube-scheduler
// settles, and prints each workload's pods bound beside the forecast's. It returns
// errDisagrees when one was bound outside the forecast's range.
func runSwitch(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("devcluster switch", flag.ContinueOnError)
	o := switchOptions{out: out}
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the dev cluster's kubeconfig (default $KUBECONFIG)")
	fs.StringVar(&o.gfdLabels, "gfd-labels", "drop", "whether GPU Feature Discovery's labels stay after the switch: drop or keep")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "kube-scheduler has settled when no pod is bound for this long")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "the longest the pods may take to settle")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: devcluster switch [-kubeconfig FILE] [flags]

Switches a running dev cluster to DRA, as docs/tasks/cutover.md's step "Switch" says and as
the rehearsal does: the forecast from the cluster, the nodes moved to the DRA stack, every
pod of the workloads recreated at once, each workload's pods bound beside the forecast's.
Exit code 1 when a workload is bound outside the forecast's range.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.kubeconfig == "" {
		return errors.New("switch: no -kubeconfig and no $KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	cfg.WarningHandler = rest.NoWarnings{} // the webhook's warnings on the recreated pods are its report's
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return switchCluster(ctx, cs, o)
}

// switchCluster forecasts, switches, recreates and compares.
func switchCluster(ctx context.Context, cs kubernetes.Interface, o switchOptions) error {
	docs, err := live.Workloads(ctx, cs, nil)
	if err != nil {
		return fmt.Errorf("read the workloads: %w", err)
	}
	before, err := live.Inventory(ctx, cs)
	if err != nil {
		return fmt.Errorf("read the fleet: %w", err)
	}
	gfd, err := forecast.ParseGFDLabels(o.gfdLabels)
	if err != nil {
		return fmt.Errorf("-gfd-labels: %w", err)
	}
	policy := translate.DefaultPolicy()
	rows, _, after, err := offline.Cutover(ctx, docs, offline.CutoverOptions{Policy: policy, Before: before,
		Forecast: forecast.Options{Policy: policy, GFDLabels: gfd}, Quotas: offline.QuotasOf(docs), Check: feasibility.Options{Timeout: 5 * time.Second}})
	if err != nil {
		return fmt.Errorf("forecast: %w", err)
	}
	fmt.Fprintf(o.out, "switch: forecast %d workloads against %d nodes\n", len(rows), len(before.Nodes))
	for _, ns := range namespacesOf(rows) {
		if m := namespaceMode(ctx, cs, ns); m != api.ModeEnforce {
			fmt.Fprintf(o.out, "switch: namespace %s is in mode %q, not enforce: its pods stay as submitted, and the forecast is of pods claimbridge translates (label it %s=enforce first, step 6 of docs/tasks/cutover.md)\n",
				ns, m, api.LabelMode)
		}
	}
	if err := moveNodes(ctx, cs, after.Inventory); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "switch: %d nodes moved to the DRA stack (%d ResourceSlices, %d DeviceClasses)\n",
		len(after.Inventory.Nodes), len(after.Inventory.Slices), len(after.Inventory.Classes))
	n, err := recreatePods(ctx, cs, namespacesOf(rows), pinnedAtCreation(docs))
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "switch: %d pods recreated at once; waiting until kube-scheduler has bound no pod for %s\n", n, o.settle)
	bound, err := settleBound(ctx, cs, after.Snapshot, namespacesOf(rows), o.settle, o.timeout)
	if err != nil {
		return err
	}
	return compare(o.out, rows, bound)
}

// moveNodes gives every node of after its labels and its capacity and allocatable, and
// creates the DeviceClasses and ResourceSlices of after that the cluster does not have.
func moveNodes(ctx context.Context, cs kubernetes.Interface, after *feasibility.Inventory) error {
	for _, c := range after.Classes {
		c = c.DeepCopy()
		c.ResourceVersion, c.UID = "", ""
		if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create DeviceClass %s: %w", c.Name, err)
		}
	}
	for _, want := range after.Nodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", want.Name, err)
		}
		n.Labels = want.Labels
		if n, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("relabel node %s: %w", want.Name, err)
		}
		n.Status.Capacity, n.Status.Allocatable = want.Status.Capacity, want.Status.Allocatable
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s's allocatable: %w", want.Name, err)
		}
	}
	for _, s := range after.Slices {
		s = s.DeepCopy()
		s.ResourceVersion, s.UID = "", ""
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
		}
	}
	return nil
}

// namespaceMode is a namespace's claimbridge mode (off when it has none, or is not found).
func namespaceMode(ctx context.Context, cs kubernetes.Interface, name string) api.Mode {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return api.ModeOff
	}
	return inventory.ModeOf(ns)
}

// namespacesOf are the namespaces of the forecast's rows.
func namespacesOf(rows []report.Row) []string {
	var out []string
	for _, r := range rows {
		if r.Namespace != "" && !slices.Contains(out, r.Namespace) {
			out = append(out, r.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// pinnedAtCreation are the bare pods of docs bound at creation ("namespace/name" to
// spec.nodeName): live.Workloads keeps the nodeName their creator set, and clears the one a
// scheduler's binding did.
func pinnedAtCreation(docs []manifest.Document) map[string]string {
	out := map[string]string{}
	for _, d := range docs {
		if p, ok := d.Object.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			out[p.Namespace+"/"+p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// recreatePods deletes every pod of the namespaces at once (grace 0), and creates again those
// no controller owns, as they were submitted (pinned: those bound at creation, to their node);
// controllers create theirs.
func recreatePods(ctx context.Context, cs kubernetes.Interface, namespaces []string, pinned map[string]string) (int, error) {
	var bare []*corev1.Pod
	n := 0
	for _, ns := range namespaces {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return n, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("delete pod %s/%s: %w", ns, p.Name, err)
			}
			n++
			if metav1.GetControllerOf(p) == nil {
				sub := asSubmitted(p)
				sub.Spec.NodeName = pinned[p.Namespace+"/"+p.Name]
				bare = append(bare, sub)
			}
		}
	}
	for _, p := range bare {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return n, fmt.Errorf("create pod %s/%s again: %w", p.Namespace, p.Name, err)
		}
	}
	return n, nil
}

// asSubmitted is a bare pod as it was submitted, before admission: the resources, node
// selector, affinity and tolerations its claimbridge.io/submitted annotation keeps (a
// translated pod), without claims, claimbridge's annotations, its node or its status, so
// that the webhook decides it again.
func asSubmitted(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: map[string]string{}}, Spec: *p.Spec.DeepCopy()}
	for k, v := range p.Annotations {
		if !strings.HasPrefix(k, "claimbridge.io/") {
			out.Annotations[k] = v
		}
	}
	if sub, ok := explain.Submitted(p); ok {
		out.Spec.NodeSelector, out.Spec.Affinity, out.Spec.Tolerations = sub.Spec.NodeSelector, sub.Spec.Affinity, sub.Spec.Tolerations
		restore := func(cs, was []corev1.Container) {
			for i := range cs {
				if i < len(was) {
					cs[i].Resources = was[i].Resources
				}
			}
		}
		restore(out.Spec.Containers, sub.Spec.Containers)
		restore(out.Spec.InitContainers, sub.Spec.InitContainers)
		out.Spec.ResourceClaims = nil
	}
	out.Spec.NodeName = ""
	return out
}

// settleBound waits until no pod of the namespaces has been bound for settle (at most
// timeout), and counts the bound pods of each workload ("namespace/Kind/name"): bound by
// kube-scheduler, or, for a pod bound at creation, to a node that offers what it asks for
// after the switch (its kubelet would admit it).
func settleBound(ctx context.Context, cs kubernetes.Interface, after *feasibility.Snapshot, namespaces []string, settle, timeout time.Duration) (map[string]int64, error) {
	var (
		last    = -1
		stable  time.Time
		counted map[string]int64
	)
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		counted = map[string]int64{}
		bound := 0
		for _, ns := range namespaces {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || len(after.LegacyUnservable(p)) > 0 {
					continue
				}
				bound++
				kind, name := livereport.WorkloadOf(p) // as the live report and the forecast name it
				counted[p.Namespace+"/"+kind+"/"+name]++
			}
		}
		if bound != last {
			last, stable = bound, time.Now()
		}
		return time.Since(stable) >= settle, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the pods did not settle within %s: %w", timeout, err)
	}
	return counted, nil
}

// compare prints each workload's forecast beside the pods bound, and says whether every one
// agrees.
func compare(out io.Writer, rows []report.Row, bound map[string]int64) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tFORECAST\tSERVED\tBOUND\tAGREES")
	disagree := 0
	for _, r := range rows {
		c := r.Cutover
		if c == nil {
			continue
		}
		key := r.Namespace + "/" + r.Kind + "/" + r.Name
		b := bound[key]
		least, most := c.Range()
		served := fmt.Sprint(least)
		if most != least {
			served = fmt.Sprintf("%d–%d", least, most)
		}
		ok := rehearsal.Agrees(c, b) // as the rehearsal judges it
		if !ok {
			disagree++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%d\t%d\t%t\n", key, c.Result, served, c.Pods, b, ok)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if disagree > 0 {
		return fmt.Errorf("%w: %d workloads", errDisagrees, disagree)
	}
	fmt.Fprintln(out, "switch: every workload was bound as forecast")
	return nil
}
