// Package v1alpha1 is the TranslationPolicy API, claimbridge.io/v1alpha1:
// the document that says how legacy device requests (extended resources and
// node labels) map to DRA device requests.
//
// It holds the types, with each field's default said on the field; [Decode]
// (YAML or JSON, unknown and duplicate fields rejected with their paths);
// validation, every error with its field path; [Resolve], which merges the
// rules of the built-in profiles a policy names with its own and fills in
// the defaults; the built-in profiles themselves (profiles/*.yaml,
// [ProfileNames], [ProfileSource]); and [ParseKueueConfiguration], which
// reads Kueue's own Configuration into spec.kueue's deviceClassMappings.
//
// The package is plain data and checks: no client, no CEL, no translation.
// The translator (package translate) compiles a resolved policy. The doc
// comments of the types are the policy reference: the field reference of
// docs/reference/policy.md is generated from them (go run ./hack/apidocs),
// and a test fails when the page and the comments differ. They are written
// for a reader of that page as much as of the code: a field's comment
// starts with its Go name, which the page writes as its YAML name; other
// fields are named [Type.Field] (or, in their own type, by a Go name of
// more than one word),
// constants by their Go name, which the page writes as their value; and
// literals are "quoted".
package v1alpha1
