//go:build unix

package cli

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/internal/k8sbins"
	"github.com/claimbridge/claimbridge/internal/rehearsal"
	"github.com/claimbridge/claimbridge/internal/rehearsal/published"
	"github.com/claimbridge/claimbridge/report"
)

// Exit codes of rehearse.
const (
	rehearseAgrees    = 0 // every workload bound as forecast
	rehearseDisagrees = 1 // a workload bound otherwise than forecast
	rehearseFailed    = 2 // bad input, or the rehearsal could not run
)

// rehearseOptions are rehearse's flags: audit --forecast's inputs and the rehearsal's own.
type rehearseOptions struct {
	audit auditOptions
	// The control-plane binaries (package k8sbins).
	k8sBin                   string
	download                 bool
	k8sURL, etcdURL, version string
	// The rehearsal.
	mode            string
	settle, timeout time.Duration
	keep            bool
	// publish is the ConfigMap NAMESPACE/NAME the page goes to (package published).
	publish string
}

func newRehearseCommand() *cobra.Command {
	o := rehearseOptions{audit: auditOptions{forecast: forecastFlags{on: true}}}
	c := &cobra.Command{
		Use:   "rehearse (-f FILE|DIR --fleet DIR | --kubeconfig FILE [-n NS...]) [-o table|json|yaml|markdown|html] [flags]",
		Short: "Forecast the switch to DRA, then rehearse it on a local control plane with the real kube-scheduler",
		Long: `Forecasts the switch from the device plugin to DRA exactly as
'claimbridge audit --forecast' does (the same inputs and flags), then proves it
on the real scheduler: it starts a control plane on 127.0.0.1 (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler; no kubelet, nothing
runs), publishes the forecast fleet on it (the nodes as they will be after the
switch, the ResourceSlices the DRA drivers will publish, their DeviceClasses),
runs 'claimbridge serve' of this same executable in front of it with the same
policy, creates every pod of every workload the switch concerns at once, waits
until kube-scheduler has bound no pod for --settle, and prints the forecast's
page with, on each row, the pods bound beside the pods the forecast said are
served. An OrderDependent or Partial workload agrees when the pods bound lie
within the range the forecast gave ("1–2/2"). With --kubeconfig or --in-cluster
the cluster is only read, but for the one ConfigMap --publish names, which
'claimbridge serve --rehearsal-configmap' serves at /rehearsal (the chart's
rehearsal.enabled runs it as a Job). Everything it starts is stopped, and its
files removed, when it ends.

The control-plane binaries are found in this order: --k8s-bin DIR, then
$KUBEBUILDER_ASSETS (envtest's layout, with kube-controller-manager and
kube-scheduler added), then $CLAIMBRIDGE_K8S_BIN; then the cache
($CLAIMBRIDGE_CACHE, else claimbridge/ in the user's cache directory); then the
official release binaries are downloaded into it (Kubernetes from
--k8s-download-url, etcd from --etcd-download-url), each verified against its
published checksum; when downloading is refused (--k8s-download=false) or
fails, they are built from the pinned Go modules with the go toolchain (857 s
on 2 cores the first time). The Kubernetes release is the cluster's with
--kubeconfig, else --k8s-version.

Exit codes, for CI jobs:
  0  every workload was bound as forecast
  1  a workload was bound otherwise than forecast
  2  bad input, or the rehearsal could not run`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			code, err := o.run(c)
			if err != nil {
				fmt.Fprintln(c.ErrOrStderr(), "claimbridge:", err)
				return exitError{rehearseFailed}
			}
			if code != rehearseAgrees {
				return exitError{code}
			}
			return nil
		},
	}
	f := c.Flags()
	a := &o.audit
	f.StringSliceVarP(&a.files, "filename", "f", nil, "manifest file, directory or - for stdin (repeatable)")
	f.StringSliceVar(&a.fleets, "fleet", nil, "fleet inventory before the switch: YAML file or directory (repeatable)")
	f.StringVarP(&a.output, "output", "o", "table", "output format: "+strings.Join(report.Formats, ", "))
	f.StringVar(&a.kubeconfig, "kubeconfig", "", "rehearse the workloads (and, without --fleet, the nodes) of a live cluster, which is only read")
	f.BoolVar(&a.inCluster, "in-cluster", false, "rehearse the cluster this runs in, read through its pod's ServiceAccount (instead of --kubeconfig): the chart's rehearsal Job")
	f.StringSliceVarP(&a.namespaces, "namespace", "n", nil, "with --kubeconfig or --in-cluster: the namespaces to rehearse (default all)")
	f.DurationVar(&a.timeout, "timeout", 5*time.Second, "deadline of one feasibility check of the forecast")
	a.pol.add(c)
	a.forecast.addOptions(c)
	f.VisitAll(func(fl *pflag.Flag) { fl.Usage = strings.TrimPrefix(fl.Usage, "with --forecast: ") })
	f.StringVar(&o.k8sBin, "k8s-bin", "", "directory of etcd, kube-apiserver, kube-controller-manager and kube-scheduler to run (default: found, downloaded or built; see above)")
	f.BoolVar(&o.download, "k8s-download", true, "download the official release binaries when none are found (false: build them from Go modules)")
	f.StringVar(&o.k8sURL, "k8s-download-url", k8sbins.DefaultKubernetesURL, "where the Kubernetes binaries are downloaded from: <url>/<version>/bin/<os>/<arch>/<name> and <name>.sha512 (a mirror's)")
	f.StringVar(&o.etcdURL, "etcd-download-url", k8sbins.DefaultEtcdURL, "where etcd is downloaded from: <url>/<version>/etcd-<version>-<os>-<arch>.tar.gz and <url>/<version>/SHA256SUMS (a mirror's)")
	f.StringVar(&o.version, "k8s-version", k8sbins.Pinned().Kubernetes, "Kubernetes release of the control plane without --kubeconfig (with it: the cluster's)")
	f.StringVar(&o.mode, "mode", "enforce", "claimbridge mode of the workloads' namespaces: enforce or audit")
	f.DurationVar(&o.settle, "settle", 10*time.Second, "kube-scheduler has settled when it has bound no pod for this long")
	f.DurationVar(&o.timeout, "settle-timeout", 5*time.Minute, "the longest the pods may take to settle")
	f.StringVar(&o.publish, "publish", "", "with --kubeconfig or --in-cluster: also write the page (HTML) into this ConfigMap, NAMESPACE/NAME, which claimbridge serve --rehearsal-configmap serves at /rehearsal")
	f.BoolVar(&o.keep, "keep", false, "keep the control plane's directory (PKI, etcd data, component logs) after stopping, and say where it is")
	return c
}

// run rehearses and returns the exit code; an error means it could not.
func (o *rehearseOptions) run(c *cobra.Command) (int, error) {
	a := &o.audit
	fopts, err := a.validate()
	if err != nil {
		return 0, err
	}
	if o.mode != "enforce" && o.mode != "audit" {
		return 0, usagef("--mode must be enforce or audit")
	}
	publishNS, publishName, err := o.publishTarget()
	if err != nil {
		return 0, err
	}
	policy, err := a.pol.load()
	if err != nil {
		return 0, err
	}
	in, err := a.read(c)
	if err != nil {
		return 0, err
	}
	version := o.version
	if a.live() {
		if fopts.Platform, err = a.forecast.loadPlatform(a.detected); err != nil {
			return 0, err
		}
		if version, err = a.serverRelease(); err != nil {
			return 0, err
		}
	}
	fc, err := runCutover(c.Context(), in, policy, fopts, "")
	if err != nil {
		return 0, err
	}
	serve, cleanup, err := a.pol.serveArgs()
	if err != nil {
		return 0, err
	}
	defer cleanup()
	platformArgs, cleanupPlatform, err := a.forecast.platformServeArgs()
	if err != nil {
		return 0, err
	}
	defer cleanupPlatform()
	serve = append(serve, platformArgs...)
	progress := c.ErrOrStderr()
	bins, err := k8sbins.Find(c.Context(), k8sbins.Options{Dir: o.k8sBin, Kubernetes: version, NoDownload: !o.download,
		KubernetesURL: o.k8sURL, EtcdURL: o.etcdURL, Progress: progress})
	if err != nil {
		return 0, fmt.Errorf("control-plane binaries: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find this executable for claimbridge serve: %w", err)
	}
	res, err := rehearsal.Run(c.Context(), rehearsal.Options{Docs: in.Docs, Rows: fc.rows, After: fc.after, Policy: policy, Serve: serve,
		Mode: o.mode, BinDir: bins.Dir, Claimbridge: self, Settle: o.settle, Timeout: o.timeout, Keep: o.keep, Progress: progress})
	if err != nil {
		return 0, err
	}
	rep := fc.report(c.Context(), in.Source+" (rehearsed after the switch to DRA)", policy)
	rep.Rehearsal = &cutover.Rehearsal{Kubernetes: cmp.Or(bins.Kubernetes, version), Binaries: bins.How, Workloads: res.Rehearsed, Disagree: res.Disagree}
	if err := rep.Write(c.OutOrStdout(), a.output); err != nil {
		return 0, err
	}
	fmt.Fprintf(progress, "rehearse: %s\n", res.Timings)
	if publishName != "" {
		if err := o.publishPage(c, rep, publishNS, publishName); err != nil {
			return 0, err
		}
	}
	if res.Disagree > 0 {
		return rehearseDisagrees, nil
	}
	if err := c.Context().Err(); err != nil {
		return 0, err
	}
	return rehearseAgrees, nil
}

// publishTarget checks --publish: NAMESPACE/NAME, with a cluster to write to.
func (o *rehearseOptions) publishTarget() (namespace, name string, err error) {
	if o.publish == "" {
		return "", "", nil
	}
	namespace, name, ok := strings.Cut(o.publish, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", usagef("--publish takes NAMESPACE/NAME of a ConfigMap, not %q", o.publish)
	}
	if !o.audit.live() {
		return "", "", usagef("--publish writes into the cluster: it needs --kubeconfig or --in-cluster")
	}
	return namespace, name, nil
}

// publishPage writes the page, as HTML, into the ConfigMap namespace/name.
func (o *rehearseOptions) publishPage(c *cobra.Command, rep *report.Report, namespace, name string) error {
	var page bytes.Buffer
	if err := rep.Write(&page, "html"); err != nil {
		return err
	}
	cs, err := o.audit.cluster()
	if err != nil {
		return err
	}
	r := rep.Rehearsal
	workloads := "workloads"
	if r.Workloads == 1 {
		workloads = "workload"
	}
	summary := fmt.Sprintf("%d %s rehearsed on Kubernetes %s (%s), %d bound otherwise than forecast", r.Workloads, workloads, r.Kubernetes, r.Binaries, r.Disagree)
	if err := published.Publish(c.Context(), cs, namespace, name, published.Page{HTML: page.Bytes(), At: time.Now(), Summary: summary}); err != nil {
		return err
	}
	fmt.Fprintf(c.ErrOrStderr(), "rehearse: the page is published in configmap %s/%s (%d bytes): %s\n", namespace, name, page.Len(), summary)
	return nil
}

// serverRelease is the Kubernetes release of the live cluster.
func (o *auditOptions) serverRelease() (string, error) {
	cs, err := o.cluster()
	if err != nil {
		return "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	return k8sbins.ReleaseOf(v.GitVersion)
}

// platformServeArgs are the flags that give claimbridge serve the platform --platform and
// --platform-preset declare, so that its translations are the forecast's: --platform FILE, or
// a Platform document of the presets, then the file's own, written to a temporary file. What
// the forecast detected of a live cluster is not passed: serve detects it on the rehearsal's
// control plane, which runs no driver. cleanup removes what it wrote.
func (f *forecastFlags) platformServeArgs() (args []string, cleanup func(), err error) {
	cleanup = func() {}
	if f.platform == "" && len(f.presets) == 0 {
		return nil, cleanup, nil
	}
	doc := &v1alpha1.Platform{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PlatformKind}
	if f.platform != "" {
		data, err := os.ReadFile(f.platform)
		if err != nil {
			return nil, cleanup, fmt.Errorf("--platform: %w", err)
		}
		if doc, err = v1alpha1.DecodePlatform(data); err != nil {
			return nil, cleanup, fmt.Errorf("--platform %s: %w", f.platform, err)
		}
	}
	// The presets apply before the document, as the forecast applies them.
	doc.Spec.Presets = append(slices.Clone(f.presets), doc.Spec.Presets...)
	if doc.Metadata.Name == "" {
		doc.Metadata.Name = "rehearsal"
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, cleanup, err
	}
	file, cleanup, err := tempFile("claimbridge-rehearsal-platform-*.yaml", data)
	if err != nil {
		return nil, cleanup, err
	}
	return []string{"--platform", file}, cleanup, nil
}

// tempFile writes data into a new temporary file named after pattern; cleanup removes it.
func tempFile(pattern string, data []byte) (name string, cleanup func(), err error) {
	cleanup = func() {}
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", cleanup, err
	}
	cleanup = func() { _ = os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return "", cleanup, err
	}
	if err := f.Close(); err != nil {
		return "", cleanup, err
	}
	return f.Name(), cleanup, nil
}

// serveArgs are the flags that give claimbridge serve this policy: the file of --policy,
// or a TranslationPolicy of the --profile profiles written to a temporary file, and
// --kueue-config. cleanup removes what it wrote.
func (p *policyFlags) serveArgs() (args []string, cleanup func(), err error) {
	cleanup = func() {}
	switch {
	case p.file != "":
		abs, err := filepath.Abs(p.file)
		if err != nil {
			return nil, cleanup, err
		}
		args = append(args, "--policy", abs)
	case len(p.profiles) > 0:
		tp := &v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind, Spec: v1alpha1.PolicySpec{Profiles: slices.Clone(p.profiles)}}
		tp.Metadata.Name = "rehearsal"
		data, err := yaml.Marshal(tp)
		if err != nil {
			return nil, cleanup, err
		}
		name, rm, err := tempFile("claimbridge-rehearsal-policy-*.yaml", data)
		cleanup = rm
		if err != nil {
			return nil, cleanup, err
		}
		args = append(args, "--policy", name)
	}
	if p.kueue != "" {
		abs, err := filepath.Abs(p.kueue)
		if err != nil {
			return nil, cleanup, err
		}
		args = append(args, "--kueue-config", abs)
	}
	return args, cleanup, nil
}
