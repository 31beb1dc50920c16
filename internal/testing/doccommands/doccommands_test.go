package doccommands

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		text         string
		wantBlocks   []Block
		wantProblems []Problem
	}{
		"each line of an sh block is a command, comments and blank lines are not": {
			text: "# Title\n\n```sh\n# a comment\nclaimbridge version\n\nclaimbridge policy list   # trailing\n```\n",
			wantBlocks: []Block{{Line: 3, Commands: []Command{
				{Line: 5, Text: "claimbridge version"},
				{Line: 7, Text: "claimbridge policy list   # trailing"},
			}}},
		},
		"a backslash joins the next line to the command": {
			text: "```sh\nclaimbridge audit -f examples/workloads \\\n  --fleet examples/fleets/mixed\nclaimbridge version\n```\n",
			wantBlocks: []Block{{Line: 1, Commands: []Command{
				{Line: 2, Text: "claimbridge audit -f examples/workloads \\\n  --fleet examples/fleets/mixed"},
				{Line: 4, Text: "claimbridge version"},
			}}},
		},
		"other blocks are text, even when they look like commands": {
			text: "```yaml\nkind: Pod\n```\n```\nclaimbridge version\n```\n~~~console\n$ ls\n~~~\n",
		},
		"an indented block inside a list item loses its indentation": {
			text: "1. **Forecast.**\n\n   ```sh\n   claimbridge audit --forecast \\\n     -f examples/cutover\n   ```\n",
			wantBlocks: []Block{{Line: 3, Commands: []Command{
				{Line: 4, Text: "claimbridge audit --forecast \\\n  -f examples/cutover"},
			}}},
		},
		"a skip with its reason is kept on the block": {
			text:       "<!-- doc-test: skip (needs a live cluster) -->\n```sh\nkubectl get pods\n```\n",
			wantBlocks: []Block{{Line: 2, Skip: "needs a live cluster", Commands: []Command{{Line: 3, Text: "kubectl get pods"}}}},
		},
		"an exit directive sets the last command's exit code": {
			text:       "<!-- doc-test: exit 1 -->\n```sh\nclaimbridge audit --fail-on breaks\n```\n",
			wantBlocks: []Block{{Line: 2, Exit: 1, Commands: []Command{{Line: 3, Text: "claimbridge audit --fail-on breaks"}}}},
		},
		"a skip without a reason is a problem": {
			text:         "<!-- doc-test: skip -->\n```sh\nkubectl get pods\n```\n<!-- doc-test: skip () -->\n```sh\nkubectl get nodes\n```\n",
			wantBlocks:   []Block{{Line: 2, Commands: []Command{{Line: 3, Text: "kubectl get pods"}}}, {Line: 6, Commands: []Command{{Line: 7, Text: "kubectl get nodes"}}}},
			wantProblems: []Problem{{1, "a skipped block says why: <!-- doc-test: skip (REASON) -->"}, {5, "a skipped block says why: <!-- doc-test: skip (REASON) -->"}},
		},
		"a directive away from its fence is a problem, and its block runs": {
			text:         "<!-- doc-test: skip (cluster) -->\n\n```sh\nkubectl get pods\n```\n",
			wantBlocks:   []Block{{Line: 3, Commands: []Command{{Line: 4, Text: "kubectl get pods"}}}},
			wantProblems: []Problem{{1, "a doc-test directive must stand on the line right before a ```sh fence"}},
		},
		"an unknown directive is a problem": {
			text:         "<!-- doc-test: ignore -->\n```sh\nls\n```\n",
			wantBlocks:   []Block{{Line: 2, Commands: []Command{{Line: 3, Text: "ls"}}}},
			wantProblems: []Problem{{1, `unknown doc-test directive "ignore": skip (REASON) or exit N`}},
		},
		"a directive inside a text block is text": {
			text: "```markdown\n<!-- doc-test: skip -->\n```sh\n```\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			blocks, problems := Parse(tc.text)
			if diff := cmp.Diff(tc.wantBlocks, blocks); diff != "" {
				t.Errorf("blocks (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}
