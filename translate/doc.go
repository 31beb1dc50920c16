// Package translate turns a Pod that asks for devices the legacy way
// (extended resources such as nvidia.com/gpu, node labels from GPU Feature
// Discovery, Node Feature Discovery or GKE) into a Pod that refers to a DRA
// ResourceClaimTemplate, following a TranslationPolicy.
//
// The package is pure and deterministic: typed API objects in, typed results
// out; no API client, no context, no logger, no clock, no global state (the
// compiled policy caches CEL compilations, which changes no result). Maps are
// walked in sorted order and every generated name is derived from content.
//
// An error from [Pod] or [LoadPolicy] means the input itself was invalid. A
// pod that cannot or should not be translated is a [Result] with
// OutcomeKeepLegacy or OutcomeSkip and the [Reason]s; the pod is returned
// unchanged. Every generated CEL expression is built from escaped literals
// and compiled and cost-checked with the DRA CEL compiler as kube-apiserver
// does for a new object.
package translate
