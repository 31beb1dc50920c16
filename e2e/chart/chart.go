// Package chart renders charts/claimbridge with the Helm library, offline, the way
// `helm template` does (client-only install, schema validation, the chart's own guards), and
// decodes the result into typed objects. Tests of the chart live here; the e2e suites use
// RenderWebhookConfiguration to install the MutatingWebhookConfiguration the chart ships.
package chart

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
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

// Load reads the chart from Dir.
func Load() (*helmchart.Chart, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return loader.Load(dir)
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

// Options of Render.
type Options struct {
	Release, Namespace string // default DefaultRelease, DefaultNamespace
	// APIVersions the cluster serves in addition to the built-in ones (like --api-versions).
	APIVersions []string
	// Kubeconfig, when set, renders against that cluster as an upgrade dry run
	// (`helm upgrade --dry-run=server`): templates' lookup calls see the live objects and the
	// capabilities are the server's. Nothing is changed in the cluster.
	Kubeconfig string
}

// Render renders the chart with values (over values.yaml), as `helm template` would: the
// values are checked against values.schema.json and the templates' guards; an error names
// the violation.
func Render(values map[string]any, opts Options) (*Rendered, error) {
	ch, err := Load()
	if err != nil {
		return nil, err
	}
	if opts.Release == "" {
		opts.Release = DefaultRelease
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{}
	install := action.NewInstall(cfg)
	install.DryRun = true
	install.Replace = true
	install.IncludeCRDs = true
	install.ReleaseName = opts.Release
	install.Namespace = opts.Namespace
	if opts.Kubeconfig == "" {
		install.ClientOnly = true
		install.KubeVersion = kv
		install.APIVersions = opts.APIVersions
	} else {
		flags := genericclioptions.NewConfigFlags(false)
		flags.KubeConfig = &opts.Kubeconfig
		flags.Namespace = &opts.Namespace
		if err := cfg.Init(flags, opts.Namespace, "secret", func(string, ...any) {}); err != nil {
			return nil, fmt.Errorf("connect to the cluster: %w", err)
		}
		install.DryRunOption = "server"
		install.IsUpgrade = true // like `helm upgrade --dry-run=server`: objects may exist
	}
	if values == nil {
		values = map[string]any{}
	}
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, err
	}
	out := &Rendered{Manifests: releaseutil.SplitManifests(rel.Manifest), Notes: rel.Info.Notes}
	_, manifests, err := releaseutil.SortManifests(splitBySource(rel.Manifest), nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sort manifests: %w", err)
	}
	out.Manifests = map[string]string{}
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
func RenderWebhookConfiguration(values map[string]any, opts Options) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	r, err := Render(values, opts)
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
