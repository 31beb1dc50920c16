// Package webhook is claimbridge's admission side: the pod mutating handler
// (decode → skip with a stated reason → namespace mode → translate →
// feasibility → patch or warnings), the informer-backed inventory it reads,
// the template lifecycle controller, policy reloading and the per-namespace
// report. Decisions read caches only; the one API write on the admission
// path is creating a template the cache does not show yet.
package webhook
