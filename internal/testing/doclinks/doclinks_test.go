package doclinks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckFindsBrokenLinks(t *testing.T) {
	cases := map[string]struct {
		file string
		want []string
	}{
		"links to files, headings with code, repeated headings, <a id>, folders, lines of a file and URLs resolve; code holds no links": {
			file: "good.md",
		},
		"a link back from a page in a folder resolves": {
			file: "docs/page.md",
		},
		"a link to a missing file is reported with its line": {
			file: "missing-file.md",
			want: []string{"missing-file.md:3: docs/missing.md: no such file: docs/missing.md"},
		},
		"a link to a missing anchor is reported, in another file and in its own": {
			file: "missing-anchor.md",
			want: []string{
				"missing-anchor.md:3: docs/page.md#nowhere: docs/page.md has no heading or <a id> #nowhere",
				"missing-anchor.md:3: #elsewhere: missing-anchor.md has no heading or <a id> #elsewhere",
			},
		},
		"a URL without a host, an unknown scheme, a path out of the repository and anchors on what has no headings are reported": {
			file: "malformed.md",
			want: []string{
				"malformed.md:3: https://: malformed URL: no host",
				`malformed.md:3: ftp://example.com/x: unknown scheme "ftp"`,
				"malformed.md:3: ../../outside.md: the target is outside the repository",
				"malformed.md:4: docs#x: an anchor on a folder: docs",
				"malformed.md:4: docs/data.txt#two: docs/data.txt is not Markdown: only line anchors (#L10, #L10-L20) are checked",
			},
		},
	}
	skip := func(target string) bool { return strings.HasPrefix(target, "docs/generated/") }
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			problems, err := Check(filepath.Join("testdata", "links"), []string{tc.file}, skip)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSlug: anchors as GitHub makes them.
func TestSlug(t *testing.T) {
	cases := map[string]struct {
		heading string
		want    string
	}{
		"code spans and punctuation are dropped": {heading: "`claimbridge serve` flags", want: "claimbridge-serve-flags"},
		"a colon and a dot go, dashes stay":      {heading: "After the switch: no silent Pending", want: "after-the-switch-no-silent-pending"},
		"parentheses go":                         {heading: "Capacities of a device (HAMi)", want: "capacities-of-a-device-hami"},
		"a version's dots go":                    {heading: "NVIDIA DRA driver v0.5", want: "nvidia-dra-driver-v05"},
		"a link shows its text":                  {heading: "See [the policy](policy.md)", want: "see-the-policy"},
		"letters of other scripts stay":          {heading: "Größe", want: "größe"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Slug(tc.heading); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}
