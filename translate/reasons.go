package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/reason"
)

// Paths every translation names, built once: a field.Path is immutable, and
// its children only point at it.
var (
	pathNodeSelector   = field.NewPath("spec", "nodeSelector")
	pathNodeAffinity   = field.NewPath("spec", "affinity", "nodeAffinity")
	pathRequiredTerms  = pathNodeAffinity.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	pathPreferredTerms = pathNodeAffinity.Child("preferredDuringSchedulingIgnoredDuringExecution")
	pathInitContainers = field.NewPath("spec", "initContainers")
	pathContainers     = field.NewPath("spec", "containers")
)

// sayAt is say with the field path already a string.
func sayAt(code reason.Code, path string, format string, args ...any) reason.Reason {
	r := say(code, nil, format, args...)
	r.Field = path
	return r
}

// sayText is sayAt with a message that needs no formatting.
func sayText(code reason.Code, path, msg string) reason.Reason {
	return reason.Reason{Code: code, Severity: reasons[code].Severity, Message: msg, Field: path}
}

// say makes a reason of a code, with the severity its catalog entry gives.
func say(code reason.Code, p *field.Path, format string, args ...any) reason.Reason {
	r := reason.Reason{Code: code, Severity: reasons[code].Severity, Message: fmt.Sprintf(format, args...)}
	if p != nil {
		r.Field = p.String()
	}
	return r
}
