package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture is a module tree: fleet/ holds a function of 121 lines, one with
// 7 parameters and one at both limits; translate/ is small; a test file,
// hack/, internal/testing/, e2e/ and a testdata/ hold functions over both
// limits that are not product code.
const fixture = "testdata/module"

var defaults = limits{FuncLines: 120, Params: 6, TranslateLines: 8000, PackageLines: 5000}

func TestMeasure(t *testing.T) {
	m, err := measure(fixture)
	if err != nil {
		t.Fatal(err)
	}
	want := &measurement{
		Funcs: []function{
			{File: "fleet/fleet.go", Line: 6, Name: "long", Lines: 121, Params: 0},
			{File: "fleet/fleet.go", Line: 130, Name: "(*sizer).fine", Lines: 120, Params: 6},
			{File: "fleet/fleet.go", Line: 252, Name: "unnamed", Lines: 1, Params: 3},
			{File: "fleet/fleet.go", Line: 255, Name: "wide", Lines: 1, Params: 7},
			{File: "translate/translate.go", Line: 4, Name: "Translate", Lines: 1, Params: 1},
			{File: "translate/translate.go", Line: 7, Name: "func literal", Lines: 3, Params: 1},
		},
		Packages: []pkg{{Dir: "fleet", Lines: 255}, {Dir: "translate", Lines: 9}},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("measure(%s) (-want,+got):\n%s", fixture, diff)
	}
}

func TestOver(t *testing.T) {
	m, err := measure(fixture)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		limits limits
		want   []string
	}{
		"the defaults find the 121-line function and the 7-parameter one, not those at the limits": {
			limits: defaults,
			want: []string{
				"function fleet/fleet.go:6 long: 121 lines (limit 120)",
				"function fleet/fleet.go:255 wide: 7 parameters (limit 6)",
			},
		},
		"translate/ is held to its own limit": {
			limits: limits{FuncLines: 121, Params: 7, TranslateLines: 8, PackageLines: 5000},
			want:   []string{"package translate/: 9 non-test lines (limit 8)"},
		},
		"every other package is held to the package limit": {
			limits: limits{FuncLines: 121, Params: 7, TranslateLines: 8000, PackageLines: 9},
			want:   []string{"package fleet/: 255 non-test lines (limit 9)"},
		},
		"nothing is over limits above every size": {
			limits: limits{FuncLines: 121, Params: 7, TranslateLines: 9, PackageLines: 255},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, m.over(tc.limits)); diff != "" {
				t.Errorf("over (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWriteListsTheLargestFirst(t *testing.T) {
	m, err := measure(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	write(&b, m, 2)
	want := strings.Join([]string{
		"longest functions (lines from func to the closing brace), top 2:",
		"    121  long  fleet/fleet.go:6",
		"    120  (*sizer).fine  fleet/fleet.go:130",
		"most parameters (the receiver not counted), top 2:",
		"      7  wide  fleet/fleet.go:255",
		"      6  (*sizer).fine  fleet/fleet.go:130",
		"packages (non-test lines):",
		"    255  fleet/",
		"      9  translate/",
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("write (-want,+got):\n%s", diff)
	}
}
