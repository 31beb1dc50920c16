package reportpage

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/claimbridge/claimbridge/internal/testing/browser"
	"github.com/claimbridge/claimbridge/report"
)

// CheckInBrowser loads a report page in Chromium and checks it against
// the report: every number (Check), the filter and the sort of
// the table through the address's fragment, and a screenshot at desktop
// and phone widths and an A4 PDF saved as base+".png", "-narrow.png" and
// ".pdf".
func CheckInBrowser(t *testing.T, chromium *browser.Chromium, url string, rep *report.Report, base string) {
	t.Helper()
	ctx := t.Context()
	dom, err := chromium.DumpDOM(ctx, url, 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(dom)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(rep); err != nil {
		t.Errorf("the page does not show the report:\n%v", err)
	}
	objects, _ := p.Rows()
	if len(objects) != len(rep.Items) {
		t.Errorf("the table has %d rows, the report %d", len(objects), len(rep.Items))
	}

	// Filtered to the rows that stay legacy, sorted by devices, largest first.
	dom, err = chromium.DumpDOM(ctx, url+"#readiness=blocked&sort=3-desc", 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = Parse(dom); err != nil {
		t.Fatal(err)
	}
	objects, shown := p.Rows()
	var gotShown []string
	for i, o := range objects {
		if shown[i] {
			gotShown = append(gotShown, o)
		}
	}
	var wantShown []string
	for _, row := range rep.Items {
		if readiness(row) == "blocked" {
			wantShown = append(wantShown, objectOf(row))
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(gotShown)), slices.Sorted(slices.Values(wantShown))) {
		t.Errorf("filtered to blocked rows the page shows %q, want %q", gotShown, wantShown)
	}
	outputs := p.All(Element("output", ""))
	if len(outputs) != 1 || !regexp.MustCompile(`^\d+ of \d+ workloads shown$`).MatchString(Text(outputs[0])) {
		t.Errorf("the filter does not say how many rows it shows")
	}
	dom, err = chromium.DumpDOM(ctx, url+"#sort=3-desc", 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = Parse(dom); err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, tr := range p.All(Element("tr", "row")) {
		v, _ := Attr(tr, "data-devices")
		devices = append(devices, v)
	}
	if !slices.IsSortedFunc(devices, func(a, b string) int { return atoi(b) - atoi(a) }) {
		t.Errorf("sorted by devices, largest first, the rows come as %v", devices)
	}

	for _, shot := range []struct {
		suffix        string
		width, height int
	}{{".png", 1280, 6000}, {"-narrow.png", 390, 12000}} {
		if err := chromium.Screenshot(ctx, url, base+shot.suffix, shot.width, shot.height); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", base+shot.suffix)
	}
	if err := chromium.PrintPDF(ctx, url, base+".pdf"); err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile(base + ".pdf")
	if err != nil {
		t.Fatal(err)
	}
	// A4 is 595×842 points: every page.
	boxes := regexp.MustCompile(`/MediaBox\s*\[([^\]]*)\]`).FindAllSubmatch(pdf, -1)
	a4 := regexp.MustCompile(`^\s*0 0 59[45](\.\d+)? 84[12](\.\d+)?\s*$`)
	if !bytes.HasPrefix(pdf, []byte("%PDF")) || len(boxes) == 0 {
		t.Errorf("%s is not a PDF with pages", base+".pdf")
	}
	for _, b := range boxes {
		if !a4.Match(b[1]) {
			t.Errorf("a printed page is not A4: MediaBox [%s]", b[1])
		}
	}
	t.Logf("printed on %d A4 pages: %s", len(boxes), base+".pdf")
}

func objectOf(row report.Row) string {
	if row.Namespace == "" {
		return row.Kind + "/" + row.Name
	}
	return row.Namespace + "/" + row.Kind + "/" + row.Name
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
