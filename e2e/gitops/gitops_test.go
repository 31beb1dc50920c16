// Package gitops runs claimbridge where GitOps tools run it at deploy time:
// as a post-renderer through the Helm 4 library (the plugin that
// examples/gitops/helm-plugin ships), and as an exec KRM function through
// kustomize's own krusty (the kustomization in examples/gitops/kustomize).
// Neither needs a control plane.
package gitops

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/postrenderer"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// bin is the claimbridge binary, built once and put first on PATH, where
// the shipped plugin and function configuration look for it.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "claimbridge-gitops-")
	if err != nil {
		panic(err)
	}
	bin, err = cluster.BuildClaimbridge(context.Background(), dir)
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func examples(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root, "examples", "gitops"}, elem...)...)
}

// object is the part of a rendered object the tests look at.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

func decodeAll(t *testing.T, manifests string) ([]object, []map[string]any) {
	t.Helper()
	var objs []object
	var raw []map[string]any
	r := utilyaml.NewYAMLReader(bufioReader(manifests))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var o object
		var m map[string]any
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("decode %s: %v", doc, err)
		}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if o.Kind == "" {
			continue
		}
		objs = append(objs, o)
		raw = append(raw, m)
	}
	return objs, raw
}

// helmInstall renders the example chart client-side (as `helm template`
// or `helm install --dry-run=client` do) with the claimbridge plugin as the
// post-renderer.
func helmInstall(t *testing.T, values map[string]any, args ...string) (string, error) {
	t.Helper()
	plugins := t.TempDir()
	if err := os.CopyFS(filepath.Join(plugins, "claimbridge"), os.DirFS(examples(t, "helm-plugin"))); err != nil {
		t.Fatal(err)
	}
	settings := cli.New()
	settings.PluginsDirectory = plugins
	pr, err := postrenderer.NewPostRendererPlugin(settings, "claimbridge", args...)
	if err != nil {
		t.Fatalf("load the post-renderer plugin: %v", err)
	}
	ch, err := loader.Load(examples(t, "chart"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := common.ParseKubeVersion("v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.ReleaseName = "llm"
	install.Namespace = "ml"
	install.KubeVersion = kv
	install.PostRenderer = pr
	rel, err := install.Run(ch, values)
	if err != nil {
		return "", err
	}
	r, ok := rel.(*releasev1.Release)
	if !ok {
		t.Fatalf("release is a %T", rel)
	}
	return r.Manifest, nil
}

func TestHelmPostRenderer(t *testing.T) {
	t.Run("the chart's pod templates are translated and their templates installed with the release", func(t *testing.T) {
		manifest, err := helmInstall(t, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		objs, raw := decodeAll(t, manifest)
		var kinds []string
		translated := 0
		for i, o := range objs {
			kinds = append(kinds, o.Kind)
			if strings.Contains(mustJSON(t, raw[i]), `"claimbridge.io/template"`) {
				translated++
			}
			// As a resource name (a key of limits or requests), not a
			// toleration's key (one the chart writes, or the one translation
			// adds for a policy naming the gke profile).
			if strings.Contains(mustJSON(t, raw[i]), `"nvidia.com/gpu":`) {
				t.Errorf("%s %s still asks for nvidia.com/gpu", o.Kind, o.Metadata.Name)
			}
		}
		slices.Sort(kinds)
		if want := []string{"Deployment", "RayCluster", "ResourceClaimTemplate", "ResourceClaimTemplate"}; !slices.Equal(kinds, want) {
			t.Errorf("kinds %v, want %v", kinds, want)
		}
		if translated != 2 {
			t.Errorf("%d translated objects, want 2", translated)
		}
	})
	t.Run("post-renderer args reach claimbridge: a profile without nvidia translates nothing", func(t *testing.T) {
		manifest, err := helmInstall(t, map[string]any{}, "--profile", "tpu")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(manifest, "ResourceClaimTemplate") {
			t.Errorf("templates with the tpu profile:\n%s", manifest)
		}
	})
	t.Run("an invalid rendered manifest fails the release with claimbridge's message", func(t *testing.T) {
		_, err := helmInstall(t, map[string]any{"gpusPerWorker": "two"})
		if err == nil || !strings.Contains(err.Error(), "claimbridge") {
			t.Fatalf("error %v, want one from the claimbridge post-renderer", err)
		}
	})
}

func TestKustomizeFunction(t *testing.T) {
	t.Run("kustomize build translates the resources with the exec function", func(t *testing.T) {
		out := kustomize(t, examples(t, "kustomize"))
		objs, raw := decodeAll(t, out)
		var kinds []string
		for i, o := range objs {
			kinds = append(kinds, o.Kind)
			if o.Kind == "ResourceClaimTemplate" || o.Kind == "ConfigMap" {
				continue
			}
			s := mustJSON(t, raw[i])
			if !strings.Contains(s, `"claimbridge.io/template"`) || strings.Contains(s, `"nvidia.com/gpu":`) {
				t.Errorf("%s %s is not translated: %s", o.Kind, o.Metadata.Name, s)
			}
		}
		slices.Sort(kinds)
		// The RayCluster's workers and the Deployment ask for the same device, but their
		// requests are named after their containers: two templates.
		if want := []string{"Deployment", "RayCluster", "ResourceClaimTemplate", "ResourceClaimTemplate"}; !slices.Equal(kinds, want) {
			t.Errorf("kinds %v, want %v", kinds, want)
		}
	})
	t.Run("the function's output equals claimbridge translate's", func(t *testing.T) {
		out := kustomize(t, examples(t, "kustomize"))
		cmd := exec.Command(bin, "translate", "-f", examples(t, "kustomize", "workloads.yaml"), "--profile", "nvidia,rdma,tpu,gke")
		want, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		gotObjs, gotRaw := decodeAll(t, out)
		wantObjs, wantRaw := decodeAll(t, string(want))
		if len(gotObjs) != len(wantObjs) {
			t.Fatalf("%d objects from kustomize, %d from translate", len(gotObjs), len(wantObjs))
		}
		index := func(objs []object, raw []map[string]any) map[string]string {
			m := map[string]string{}
			for i, o := range objs {
				m[o.Kind+"/"+o.Metadata.Name] = mustJSON(t, raw[i])
			}
			return m
		}
		g, w := index(gotObjs, gotRaw), index(wantObjs, wantRaw)
		for k, v := range w {
			if g[k] != v {
				t.Errorf("%s differs:\nkustomize: %s\ntranslate: %s", k, g[k], v)
			}
		}
	})
	t.Run("failOn untranslatable fails the build", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(examples(t, "kustomize"))); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "claimbridge.yaml")
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// A TrainJob asks for GPUs where no claim can go: kept as it is, Unsupported.
		data = bytes.Replace(data, []byte("profiles: nvidia,rdma,tpu,gke"), []byte("profiles: nvidia\n  failOn: untranslatable"), 1)
		if err := os.WriteFile(cfg, data, 0o644); err != nil {
			t.Fatal(err)
		}
		trainjob := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: ft, namespace: ml}\nspec:\n  runtimeRef: {name: torch}\n  trainer:\n    resourcesPerNode:\n      limits: {nvidia.com/gpu: 2}\n"
		if err := os.WriteFile(filepath.Join(dir, "workloads.yaml"), []byte(trainjob), 0o644); err != nil {
			t.Fatal(err)
		}
		// kustomize reports the exit code; the function's results (the
		// Unsupported reason) go to its stderr.
		_, err = run(dir)
		if err == nil || !strings.Contains(err.Error(), "exit status 1") {
			t.Fatalf("error %v, want the function to fail", err)
		}
	})
}

func run(dir string) (string, error) {
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.EnabledPluginConfig(types.BploUseStaticallyLinked)
	opts.PluginConfig.FnpLoadingOptions.EnableExec = true
	k := krusty.MakeKustomizer(opts)
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return "", err
	}
	out, err := m.AsYaml()
	return string(out), err
}

func kustomize(t *testing.T, dir string) string {
	t.Helper()
	out, err := run(dir)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
