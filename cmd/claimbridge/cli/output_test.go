package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/internal/testing/golden"
)

// outputCases are real-file-shaped inputs of `claimbridge translate`, with
// the flags they are translated with; each input.yaml's output is
// input.golden.yaml.
var outputCases = map[string][]string{
	// Shaped like GoogleCloudPlatform/kubernetes-engine-samples
	// ai-ml/llm-serving-gemma/vllm/vllm-2-2b-it.yaml: a licence header, a
	// [START ...] marker above the first field and [END ...] after the last,
	// compact sequences in the Deployment, an indented one in the Service, a
	// mapping indented by four, no final newline. Translated for GKE.
	"gke-serving": {"--profile", "nvidia,gke,tpu"},
	// Shaped like GoogleCloudPlatform/kubernetes-engine-samples
	// ai-ml/llm-serving-tpus-jetstream/pytorch (the public corpus's
	// gke/jetstream-pytorch-v5e-2x4.yaml), translated with the default
	// policy: its GKE TPU node labels say it runs on GKE, so the
	// translation carries the google.com/tpu toleration GKE's admission
	// gives the original.
	"gke-tpu-default-policy": nil,
	// What `helm template` prints: a separator and a # Source: line before
	// every document, a disabled template's comment-only document, a
	// separator with a comment, sequences indented under their keys.
	"helm-rendered": nil,
	// Written by hand: a licence header, a separator with a comment, the
	// container list indented under its key and the lists inside it not.
	"mixed-indent": nil,
	// Nothing to translate: the output is the input, byte for byte.
	"unchanged": nil,
}

// TestTranslateOutputIsWhatAReviewerDiffs: translate changes only what
// translation changes. Documents that change keep the comments above their
// first field (licence headers) and the indentation of each sequence under
// its key; the others, comment-only documents and separators with comments
// included, come back byte for byte, as a file with nothing to translate
// does whole; the post-renderer writes the same.
func TestTranslateOutputIsWhatAReviewerDiffs(t *testing.T) {
	for name, flags := range outputCases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "output", name+".yaml")
			input, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(t, "", append([]string{"translate", "-f", path}, flags...)...)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "output", name+".golden.yaml"), []byte(got))
			if name == "unchanged" && got != string(input) {
				t.Errorf("a file with nothing to translate changed (-input,+output):\n%s", cmp.Diff(string(input), got))
			}

			// Every document without a device request is in the output as
			// read, its separator line included.
			for _, piece := range strings.SplitAfter(string(input), "\n---") {
				asks := strings.Contains(piece, "nvidia.com/gpu:") || strings.Contains(piece, "google.com/tpu:")
				if !asks && !strings.Contains(got, strings.TrimSuffix(piece, "---")) {
					t.Errorf("a document without a device request is not in the output as read:\n%s", piece)
				}
			}

			post, err := run(t, string(input), append([]string{"translate", "--post-render"}, flags...)...)
			if err != nil {
				t.Fatal(err)
			}
			if post != got {
				t.Errorf("the post-renderer writes otherwise (-translate,+post-render):\n%s", cmp.Diff(got, post))
			}
		})
	}
}
