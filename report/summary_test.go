package report_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

// TestSummaryLineCountsObjectsBySource: an object is its kind, namespace
// and name in one document of the input; the same name in two files is two
// objects, two templates of one document one object, and each pod the
// webhook admitted (no source) an object of its own.
func TestSummaryLineCountsObjectsBySource(t *testing.T) {
	row := func(kind, ns, name, source, path string) report.Row {
		return report.Row{Row: decisions.Row{Kind: kind, Namespace: ns, Name: name, Source: source, Path: path, Outcome: reason.OutcomeSkip}}
	}
	cases := map[string]struct {
		rows []report.Row
		want string
	}{
		"the same name in two files is two objects": {
			rows: []report.Row{row("Deployment", "ml", "web", "a/web.yaml#0", ""), row("Deployment", "ml", "web", "b/web.yaml#0", "")},
			want: "2 objects: 0 translate, 0 keep legacy, 2 skip",
		},
		"the same name in two documents of one file is two objects": {
			rows: []report.Row{row("Deployment", "ml", "web", "web.yaml#0", ""), row("Deployment", "ml", "web", "web.yaml#1", "")},
			want: "2 objects: 0 translate, 0 keep legacy, 2 skip",
		},
		"two templates of one object": {
			rows: []report.Row{row("RayCluster", "ml", "llm", "ray.yaml#0", "spec.headGroupSpec.template"), row("RayCluster", "ml", "llm", "ray.yaml#0", "spec.workerGroupSpecs[0].template")},
			want: "2 pod templates in 1 objects: 0 translate, 0 keep legacy, 2 skip",
		},
		"pods the webhook admitted, named by the same generateName": {
			rows: []report.Row{row("Pod", "ml", "web-7d9f-*", "", ""), row("Pod", "ml", "web-7d9f-*", "", "")},
			want: "2 objects: 0 translate, 0 keep legacy, 2 skip",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := report.New("", "", tc.rows).Write(&b, "table"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "\n"+tc.want+"\n") {
				t.Errorf("summary is not %q:\n%s", tc.want, b.String())
			}
		})
	}
}

// TestNewRowNamesGenerateName: an object without a name is named by its
// generateName with a star, as the webhook names such pods.
func TestNewRowNamesGenerateName(t *testing.T) {
	cases := map[string]struct {
		meta metav1.ObjectMeta
		want string
	}{
		"generateName only":    {meta: metav1.ObjectMeta{Namespace: "team-a", GenerateName: "train-"}, want: "train-*"},
		"a name wins":          {meta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-x", GenerateName: "train-"}, want: "train-x"},
		"neither: stays empty": {meta: metav1.ObjectMeta{Namespace: "team-a"}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: tc.meta}
			row := decisions.NewRow("Pod", pod, "p.yaml#0", &decide.Decision{Outcome: reason.OutcomeSkip})
			if row.Name != tc.want {
				t.Errorf("Name = %q, want %q", row.Name, tc.want)
			}
		})
	}
}
