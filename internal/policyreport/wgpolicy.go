package policyreport

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The wgpolicyk8s.io/v1alpha2 PolicyReport, as Kyverno, Kubewarden and
// Trivy write it and Policy Reporter reads it. No released Go module serves
// these types apart from whole policy engines, so they are mirrored here,
// field for field and with the same JSON names, from
// kubernetes-sigs/wg-policy-prototypes,
// policy-report/pkg/api/wgpolicyk8s.io/v1alpha2/policyreport_types.go at
// commit 25056e1f3eb5cab1e693b8c880eb693a84e099af; the CRD the chart
// installs (charts/claimbridge/files/crds/wgpolicyk8s.yaml) is
// policy-report/crd/v1alpha2/wgpolicyk8s.io_policyreports.yaml of the same
// commit.

// WGPolicyGVR is the resource of the PolicyReports.
var WGPolicyGVR = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}

// PolicyReport is a namespace's report.
type PolicyReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Scope is an optional reference to the report scope (e.g. a
	// Deployment, Namespace, or Node).
	Scope *corev1.ObjectReference `json:"scope,omitempty"`
	// ScopeSelector is an optional selector for multiple scopes (e.g. Pods).
	ScopeSelector *metav1.LabelSelector `json:"scopeSelector,omitempty"`
	// Summary counts the results.
	Summary PolicyReportSummary `json:"summary,omitempty"`
	// Results of the report.
	Results []PolicyReportResult `json:"results,omitempty"`
}

// PolicyReportSummary provides a status count summary.
type PolicyReportSummary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
}

// PolicyResult is pass, fail, warn, error or skip.
type PolicyResult string

// PolicyResultSeverity is critical, high, low, medium or info.
type PolicyResultSeverity string

// Results and severities of the schema (its enums).
const (
	ResultPass  PolicyResult = "pass"
	ResultFail  PolicyResult = "fail"
	ResultWarn  PolicyResult = "warn"
	ResultError PolicyResult = "error"
	ResultSkip  PolicyResult = "skip"

	SeverityCritical PolicyResultSeverity = "critical"
	SeverityHigh     PolicyResultSeverity = "high"
	SeverityMedium   PolicyResultSeverity = "medium"
	SeverityLow      PolicyResultSeverity = "low"
	SeverityInfo     PolicyResultSeverity = "info"
)

// PolicyReportResult provides the result for an individual policy.
type PolicyReportResult struct {
	// Source is an identifier for the policy engine that manages this report.
	Source string `json:"source"`
	// Policy is the name or identifier of the policy.
	Policy string `json:"policy"`
	// Rule is the name or identifier of the rule within the policy.
	Rule string `json:"rule,omitempty"`
	// Category indicates policy category.
	Category string `json:"category,omitempty"`
	// Severity indicates policy check result criticality.
	Severity PolicyResultSeverity `json:"severity,omitempty"`
	// Timestamp indicates the time the result was found.
	Timestamp metav1.Timestamp `json:"timestamp,omitempty"`
	// Result indicates the outcome of the policy rule execution.
	Result PolicyResult `json:"result,omitempty"`
	// Scored indicates if this result is scored.
	Scored bool `json:"scored,omitempty"`
	// Subjects is an optional reference to the checked Kubernetes resources.
	Subjects []corev1.ObjectReference `json:"resources,omitempty"`
	// SubjectSelector is an optional label selector for checked Kubernetes
	// resources.
	SubjectSelector *metav1.LabelSelector `json:"resourceSelector,omitempty"`
	// Description is a short user friendly message for the policy rule.
	Description string `json:"message,omitempty"`
	// Properties provides additional information for the policy rule.
	Properties map[string]string `json:"properties,omitempty"`
}
