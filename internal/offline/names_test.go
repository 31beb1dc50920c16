package offline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/translate"
)

// TestGenerateNameObjectsAreNamedByIt: an object named by the API server on
// creation (generateName, as `kubectl create` and Argo submit) is shown as
// its generateName with a star, in explain and in the report's rows.
func TestGenerateNameObjectsAreNamedByIt(t *testing.T) {
	input := "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: train-, namespace: team-a}\nspec:\n  template:\n    spec:\n" +
		"      restartPolicy: Never\n      containers:\n      - {name: w, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n"
	docs, err := manifest.Read([]string{"-"}, strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	items, _, err := Translate(t.Context(), docs, Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	var explain bytes.Buffer
	if err := WriteExplain(&explain, items); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(explain.String(), "Job team-a/train-* (-#0): ") {
		t.Errorf("explain does not name the Job by its generateName:\n%s", explain.String())
	}
	rows := Rows(items)
	if len(rows) != 1 || rows[0].Name != "train-*" || rows[0].Namespace != "team-a" {
		t.Errorf("rows %+v, want one named team-a/train-*", rows)
	}
}
