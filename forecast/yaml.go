package forecast

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// WriteYAML writes the After fleet — DeviceClasses, then each node followed
// by its ResourceSlices, then the other slices and the DeviceTaintRules
// (not Pods or Claims) — as multi-document YAML that
// feasibility.LoadInventory reads back as After. Each forecast slice is
// headed by a comment naming its node and what the forecast does not know.
func (r *Result) WriteYAML(w io.Writer) error {
	var docs []document
	for _, c := range r.After.Classes {
		docs = append(docs, document{obj: c})
	}
	byName := map[string]Node{}
	for _, n := range r.Nodes {
		byName[n.Name] = n
	}
	onNode := map[string][]*resourceapi.ResourceSlice{}
	for _, s := range r.After.Slices {
		if n := ptr.Deref(s.Spec.NodeName, ""); n != "" {
			onNode[n] = append(onNode[n], s)
		}
	}
	written := map[*resourceapi.ResourceSlice]bool{}
	for _, n := range r.After.Nodes {
		fn, known := byName[n.Name]
		switch {
		case !known:
			docs = append(docs, document{obj: n})
		case fn.Switched:
			docs = append(docs, document{obj: n, comments: []string{fmt.Sprintf("node %s: switched", n.Name)}})
		default:
			docs = append(docs, document{obj: n, comments: []string{fmt.Sprintf("node %s: not switched: %s", n.Name, fn.Why)}})
		}
		for _, s := range onNode[n.Name] {
			written[s] = true
			docs = append(docs, document{obj: s, comments: r.sliceComment(fn, s)})
		}
	}
	for _, s := range r.After.Slices {
		if !written[s] {
			docs = append(docs, document{obj: s})
		}
	}
	for _, t := range r.After.TaintRules {
		docs = append(docs, document{obj: t})
	}
	if err := marshalAll(docs); err != nil {
		return err
	}
	ew := &errWriter{w: w}
	ew.printf("# The fleet forecast for after the switch to DRA (claimbridge forecast).\n")
	ew.printf("# Forecast slices are named <node>-<driver>-forecast; their devices carry what the nodes' labels tell,\n")
	ew.printf("# nothing more: the comment above each says what its driver will publish that the labels cannot tell.\n")
	for _, d := range docs {
		ew.doc(d)
	}
	return ew.err
}

// document is one object of the YAML, with the comment lines above it and,
// once marshaled, its YAML.
type document struct {
	obj      any
	comments []string
	yaml     []byte
}

// marshalAll marshals the documents, on every CPU: a fleet of thousands of
// nodes writes tens of thousands of them.
func marshalAll(docs []document) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, len(docs))
	)
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(docs); i = int(next.Add(1) - 1) {
				docs[i].yaml, errs[i] = marshalObject(docs[i].obj)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Result) sliceComment(n Node, s *resourceapi.ResourceSlice) []string {
	if !r.forecast[s.Name] {
		return []string{fmt.Sprintf("node %s: %s, published before the switch", n.Name, s.Spec.Driver)}
	}
	out := []string{fmt.Sprintf("node %s: %d %s devices forecast from the node's labels and extended resources", n.Name, len(s.Spec.Devices), s.Spec.Driver)}
	for _, d := range n.Drivers {
		if d.Driver != s.Spec.Driver {
			continue
		}
		if len(d.Unknown) > 0 {
			out = append(out, "unknown (not in the devices): "+strings.Join(d.Unknown, ", "))
		}
		for _, note := range d.Notes {
			out = append(out, "note: "+note)
		}
	}
	return out
}

// errWriter writes documents until the first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// doc writes one document: "---", the comment lines, the object.
func (e *errWriter) doc(d document) {
	e.printf("---\n")
	for _, c := range d.comments {
		for _, line := range strings.Split(c, "\n") {
			e.printf("# %s\n", line)
		}
	}
	if e.err == nil {
		_, e.err = e.w.Write(d.yaml)
	}
}
