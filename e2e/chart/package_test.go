package chart

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/claimbridge/claimbridge/e2e/image"
)

func packageChart(t *testing.T) string {
	t.Helper()
	path, err := Package(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestThePackagedChartRendersExactlyLikeTheDirectory renders the archive `helm package`
// writes with the value sets the other tests use and compares every object with the
// directory's: what holds for the directory holds for the published chart. Values the
// schema or the guards refuse are refused by the archive too.
func TestThePackagedChartRendersExactlyLikeTheDirectory(t *testing.T) {
	pkg := packageChart(t)
	if got, want := filepath.Base(pkg), "claimbridge-0.1.0.tgz"; got != want {
		t.Errorf("archive %s, want %s", got, want)
	}
	cases := map[string]string{
		"default values":              "",
		"cert-manager mode":           "tls: {mode: cert-manager}",
		"cert-manager with an issuer": "tls: {mode: cert-manager, certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}}}",
		"every optional resource": `
metrics: {serviceMonitor: {enabled: true, labels: {release: prom}}}
networkPolicy: {enabled: true}
policy: {profiles: [nvidia, rdma]}
podDisruptionBudget: {enabled: false}
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`,
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			vals, err := ParseValues(values)
			if err != nil {
				t.Fatal(err)
			}
			fromDir, err := Render(t.Context(), vals, Options{})
			if err != nil {
				t.Fatal(err)
			}
			vals, _ = ParseValues(values) // Render may keep references into vals
			fromPkg, err := Render(t.Context(), vals, Options{Chart: pkg})
			if err != nil {
				t.Fatalf("render the packaged chart: %v", err)
			}
			if diff := cmp.Diff(objects(fromDir), objects(fromPkg)); diff != "" {
				t.Errorf("objects (-directory,+package):\n%s", diff)
			}
			if fromDir.Notes != fromPkg.Notes {
				t.Errorf("NOTES.txt differs:\n%s\n---\n%s", fromDir.Notes, fromPkg.Notes)
			}
		})
	}
	for name, values := range map[string]string{
		"an unknown failurePolicy":                "webhook: {failurePolicy: Sometimes}",
		"an unknown value":                        "replicas: 3",
		"a custom policy without matchConditions": "policy: {custom: 'apiVersion: claimbridge.io/v1alpha1'}",
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			vals, err := ParseValues(values)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Render(t.Context(), vals, Options{Chart: pkg}); err == nil {
				t.Errorf("the packaged chart renders %s", values)
			}
		})
	}
}

// objects are the rendered objects by kind and name (the text of a template's documents may
// differ in blank lines only).
func objects(r *Rendered) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range r.Objects {
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return out
}

// TestThePackageHoldsEveryFileOfTheChart compares the archive's file list with the chart
// directory's: the schema, the README and files/ ship with it.
func TestThePackageHoldsEveryFileOfTheChart(t *testing.T) {
	pkg := packageChart(t)
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var inPkg []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		inPkg = append(inPkg, strings.TrimPrefix(h.Name, "claimbridge/"))
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	var inDir []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		inDir = append(inDir, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(inPkg)
	slices.Sort(inDir)
	if diff := cmp.Diff(inDir, inPkg); diff != "" {
		t.Errorf("files (-directory,+package):\n%s", diff)
	}
}

// TestTheDefaultImageIsTheOneTheProjectBuilds ties the chart to the image: the default
// repository is the image's name and the default tag the chart's appVersion, which the image
// build stamps into the binary (see e2e/image).
func TestTheDefaultImageIsTheOneTheProjectBuilds(t *testing.T) {
	ch, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	stamped, err := image.ChartAppVersion(filepath.Join(dir, "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.AppVersion != stamped {
		t.Errorf("appVersion %q, the image stamps %q", ch.Metadata.AppVersion, stamped)
	}
	r := render(t, "")
	d := decodeOne[appsv1.Deployment](t, r, "Deployment", "claimbridge")
	if got, want := d.Spec.Template.Spec.Containers[0].Image, image.Repository+":"+stamped; got != want {
		t.Errorf("default image %q, want %q", got, want)
	}
}
