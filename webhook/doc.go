// Package webhook is claimbridge's admission handler for pods, thin like
// controller-runtime's defaulter: decode → skip with a stated reason →
// namespace mode → decide (decide.Pod: translation, placement proof,
// verdict) → in enforce mode, ensure the template, hold the devices and
// patch; otherwise warnings and the decision's annotations. It reads
// caches only (InventoryReader); the one API write on the admission path is
// creating a template the cache does not show yet.
package webhook
