package translate

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTranslateIsPure keeps the translator a pure function: no API client, no
// context, no logger, no clock. The feasibility package below it has its own
// rules (it takes a context for deadlines).
func TestTranslateIsPure(t *testing.T) {
	forbidden := []string{"context", "time", "log", "log/slog", "math/rand", "math/rand/v2", "os", "net/http",
		"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "k8s.io/klog", "github.com/go-logr/logr"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	celgen, err := filepath.Glob("celgen/*.go") // the CEL it writes, split out
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, celgen...)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s; translate/ must not use a client, context, logger or clock", f, path)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}
