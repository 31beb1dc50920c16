package forecast

import (
	"fmt"
	"io"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility"
)

// WriteYAML writes the After fleet — DeviceClasses, then each node followed
// by its ResourceSlices, then the other slices and the DeviceTaintRules
// (not Pods or Claims) — as multi-document YAML that
// feasibility.LoadInventory reads back as After. Each forecast slice is
// headed by a comment naming its node and what the forecast does not know.
func (r *Result) WriteYAML(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("# The fleet forecast for after the switch to DRA (claimbridge forecast).\n")
	ew.printf("# Forecast slices are named <node>-<driver>-forecast; their devices carry what the nodes' labels tell,\n")
	ew.printf("# nothing more: the comment above each says what its driver will publish that the labels cannot tell.\n")
	for _, c := range r.After.Classes {
		ew.doc(c)
	}
	byName := map[string]Node{}
	for _, n := range r.Nodes {
		byName[n.Name] = n
	}
	written := map[*resourceapi.ResourceSlice]bool{}
	for _, n := range r.After.Nodes {
		fn, known := byName[n.Name]
		switch {
		case !known:
			ew.doc(n)
		case fn.Switched:
			ew.doc(n, fmt.Sprintf("node %s: switched", n.Name))
		default:
			ew.doc(n, fmt.Sprintf("node %s: not switched: %s", n.Name, fn.Why))
		}
		for _, s := range r.After.Slices {
			if ptr.Deref(s.Spec.NodeName, "") != n.Name {
				continue
			}
			written[s] = true
			ew.doc(s, r.sliceComment(fn, s)...)
		}
	}
	for _, s := range r.After.Slices {
		if !written[s] {
			ew.doc(s)
		}
	}
	for _, t := range r.After.TaintRules {
		ew.doc(t)
	}
	return ew.err
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
func (e *errWriter) doc(obj any, comments ...string) {
	if e.err != nil {
		return
	}
	b, err := feasibility.MarshalObject(obj)
	if err != nil {
		e.err = err
		return
	}
	e.printf("---\n")
	for _, c := range comments {
		for _, line := range strings.Split(c, "\n") {
			e.printf("# %s\n", line)
		}
	}
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
