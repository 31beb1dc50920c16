// Package chart renders charts/claimbridge with the Helm library, offline, the way
// `helm template` does (client-only install, schema validation, the chart's own guards), and
// decodes the result into typed objects. Tests of the chart live here; the e2e suites use
// RenderWebhookConfiguration to install the MutatingWebhookConfiguration the chart ships.
package chart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Defaults of Render.
const (
	DefaultRelease   = "claimbridge"
	DefaultNamespace = "claimbridge-system"
	// KubeVersion is the cluster version rendering assumes (the chart requires DRA v1).
	KubeVersion = "v1.37.2"
)

// Dir is the chart's directory in this checkout.
func Dir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("locate the chart: no caller information")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "charts", "claimbridge")
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("locate the chart: %w", err)
	}
	return dir, nil
}

// Load reads the chart at path, a chart directory or a packaged archive (`helm package`
// output); an empty path is Dir.
func Load(path string) (*helmchart.Chart, error) {
	if path == "" {
		dir, err := Dir()
		if err != nil {
			return nil, err
		}
		path = dir
	}
	return loader.Load(path)
}

// Package packages the chart directory into destDir as `helm package` does and returns the
// archive's path (destDir/claimbridge-<version>.tgz).
func Package(destDir string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	p := action.NewPackage()
	p.Destination = destDir
	path, err := p.Run(dir, nil)
	if err != nil {
		return "", fmt.Errorf("package the chart: %w", err)
	}
	return path, nil
}

// Rendered is the output of one render.
type Rendered struct {
	// Manifests by template path (e.g. "claimbridge/templates/rbac.yaml"), as rendered.
	Manifests map[string]string
	// Objects in install order.
	Objects []*unstructured.Unstructured
	// Notes is NOTES.txt.
	Notes string
}

// Options of Render and Install.
type Options struct {
	Release, Namespace string // default DefaultRelease, DefaultNamespace
	// Chart is a chart directory or a packaged archive. Default: Dir, the chart of this checkout.
	Chart string
	// APIVersions the cluster serves in addition to the built-in ones (like --api-versions).
	APIVersions []string
	// Kubeconfig, when set, renders against that cluster as an upgrade dry run
	// (`helm upgrade --dry-run=server`): templates' lookup calls see the live objects and the
	// capabilities are the server's. Nothing is changed in the cluster. Install requires it.
	Kubeconfig string
}

// Render renders the chart with values (over values.yaml), as `helm template` would: the
// values are checked against values.schema.json and the templates' guards; an error names
// the violation.
func Render(ctx context.Context, values map[string]any, opts Options) (*Rendered, error) {
	mode := modeTemplate
	if opts.Kubeconfig != "" {
		mode = modeUpgradeDryRun
	}
	return run(ctx, values, opts, mode)
}

// InstallMode says what Install does.
type InstallMode int

// Install modes.
const (
	// InstallDryRun is `helm install --dry-run=server`: rendered with the cluster's
	// capabilities and lookups, every object validated against the server's OpenAPI schema
	// (custom resources included) and checked not to exist yet; nothing is created.
	InstallDryRun InstallMode = iota + 1
	// InstallForReal is `helm install`: the release and its objects are created (server-side
	// apply), without waiting for them to become ready.
	InstallForReal
)

// Install installs the chart with values into the cluster of opts.Kubeconfig, as `helm
// install` does (the namespace must exist).
func Install(ctx context.Context, values map[string]any, opts Options, mode InstallMode) (*Rendered, error) {
	if opts.Kubeconfig == "" {
		return nil, errors.New("install: no kubeconfig")
	}
	switch mode {
	case InstallDryRun:
		return run(ctx, values, opts, modeInstallDryRun)
	case InstallForReal:
		return run(ctx, values, opts, modeInstall)
	default:
		return nil, fmt.Errorf("install: unknown mode %d", mode)
	}
}

type runMode int

const (
	modeTemplate runMode = iota
	modeUpgradeDryRun
	modeInstallDryRun
	modeInstall
)

func run(ctx context.Context, values map[string]any, opts Options, mode runMode) (*Rendered, error) {
	ch, err := Load(opts.Chart)
	if err != nil {
		return nil, err
	}
	if opts.Release == "" {
		opts.Release = DefaultRelease
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	install := action.NewInstall(cfg)
	install.IncludeCRDs = true
	install.ReleaseName = opts.Release
	install.Namespace = opts.Namespace
	switch mode {
	case modeTemplate:
		install.DryRunStrategy = action.DryRunClient
		install.Replace = true
		install.KubeVersion = kv
		install.APIVersions = opts.APIVersions
	default:
		flags := genericclioptions.NewConfigFlags(false)
		flags.KubeConfig = &opts.Kubeconfig
		flags.Namespace = &opts.Namespace
		if err := cfg.Init(flags, opts.Namespace, "secret"); err != nil {
			return nil, fmt.Errorf("connect to the cluster: %w", err)
		}
		switch mode {
		case modeUpgradeDryRun:
			install.DryRunStrategy = action.DryRunServer
			install.IsUpgrade = true // like `helm upgrade --dry-run=server`: objects may exist
		case modeInstallDryRun:
			install.DryRunStrategy = action.DryRunServer
		case modeInstall:
			install.DryRunStrategy = action.DryRunNone
			install.ServerSideApply = true
			install.WaitStrategy = kube.HookOnlyStrategy // the chart has no hooks: nothing to wait for
		}
	}
	if values == nil {
		values = map[string]any{}
	}
	released, err := install.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, err
	}
	rel, ok := released.(*helmrelease.Release)
	if !ok {
		return nil, fmt.Errorf("unexpected release type %T", released)
	}
	_, manifests, err := releaseutil.SortManifests(splitBySource(rel.Manifest), nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sort manifests: %w", err)
	}
	out := &Rendered{Manifests: map[string]string{}, Notes: rel.Info.Notes}
	for _, m := range manifests {
		out.Manifests[m.Name] += m.Content + "\n---\n"
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &obj.Object); err != nil {
			return nil, fmt.Errorf("decode %s: %w", m.Name, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		out.Objects = append(out.Objects, obj)
	}
	return out, nil
}

// splitBySource groups a release manifest into documents keyed by their "# Source:" template.
func splitBySource(manifest string) map[string]string {
	files := map[string]string{}
	for i, doc := range releaseutil.SplitManifests(manifest) {
		name := i
		if first, _, ok := strings.Cut(strings.TrimSpace(doc), "\n"); ok {
			if src, ok := strings.CutPrefix(first, "# Source: "); ok {
				name = src
			}
		}
		if prev, ok := files[name]; ok {
			files[name] = prev + "\n---\n" + doc
		} else {
			files[name] = doc
		}
	}
	return files
}

// Find returns the rendered objects of kind (and name, when not empty).
func (r *Rendered) Find(kind, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			out = append(out, o)
		}
	}
	return out
}

// Kinds lists "Kind/name" of every object, sorted.
func (r *Rendered) Kinds() []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// Decode converts one rendered object into the typed object into (e.g. *appsv1.Deployment),
// strictly: a field the API type does not know is an error.
func Decode(obj *unstructured.Unstructured, into any) error {
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return fmt.Errorf("decode %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// Typed decodes every object whose kind client-go's scheme knows, strictly; it returns the
// kinds it does not know (cert-manager, Prometheus Operator).
func (r *Rendered) Typed() (known []any, unknown []schema.GroupVersionKind, err error) {
	for _, o := range r.Objects {
		gvk := o.GroupVersionKind()
		typed, err := scheme.Scheme.New(gvk)
		if err != nil {
			unknown = append(unknown, gvk)
			continue
		}
		if err := Decode(o, typed); err != nil {
			return nil, nil, err
		}
		known = append(known, typed)
	}
	return known, unknown, nil
}

// RenderWebhookConfiguration renders the chart with values and returns its
// MutatingWebhookConfiguration, for suites that install it in a test cluster (typically after
// replacing clientConfig.service with a URL and setting a caBundle).
func RenderWebhookConfiguration(ctx context.Context, values map[string]any, opts Options) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	r, err := Render(ctx, values, opts)
	if err != nil {
		return nil, err
	}
	found := r.Find("MutatingWebhookConfiguration", "")
	if len(found) != 1 {
		return nil, fmt.Errorf("chart rendered %d MutatingWebhookConfigurations, want 1", len(found))
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := Decode(found[0], cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParseValues reads a values document (YAML).
func ParseValues(doc string) (map[string]any, error) {
	vals := map[string]any{}
	err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&vals)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse values: %w", err)
	}
	return vals, nil
}
