// Package signature says when two devices, or two nodes, give the same
// answers, so that a fleet of identical machines costs a handful of
// evaluations instead of one per device or node:
//
//   - the device fields a CEL selector reads ([References]: attributes and
//     capacities by domain and name, or "the whole device");
//   - the answers of selectors on a fleet snapshot's devices ([Memo]),
//     remembered per device slot and per signature of the fields a
//     selector reads, so that two devices of one driver that agree on them
//     are evaluated once;
//   - the class key of a node ([KeyWriter.ClassKey]): its devices up to
//     per-device identities (UUIDs, bus IDs: only their pattern of
//     equality counts), its labels but the hostname, its taints, whether it
//     is unschedulable and its extended allocatable resources. Two nodes of
//     one key give the same answer to every question feasibility's
//     placement check asks, except about their names
//     ([SelectsNodeByName]).
//
// API:
//
//	type Device struct{ Slot; Driver; Device; Unknown }                   // a device as a node sees it
//	func References(env *cel.Env, expression string) ([]FieldRef, bool)    // what a selector reads
//	func (m *RefsMemo) References(env *cel.Env, expression string) ([]FieldRef, bool) // remembered
//	func NewMemo(slots int) *Memo                                           // per fleet snapshot
//	func (m *Memo) Expr(cc *cel.Cache, expression string) *Expr
//	func (e *Expr) Match(ctx, m *Memo, d Device) uint8                     // MatchYes, MatchNo, MatchError
//	func MatchAll(ctx, m *Memo, exprs []*Expr, d Device) uint8             // the allocator's order
//	func NewKeyWriter() *KeyWriter; func (k *KeyWriter) ClassKey(node, devices []Device) string
//	func ClassesFingerprint(classes map[string]*resourceapi.DeviceClass) string
//	func SelectsNodeByName(pod *corev1.Pod) bool                           // class keys cannot answer it
//
// Every answer is exactly what evaluating the selector on the device
// gives: a device whose attributes CEL cannot all convert, or that names a
// field twice, is evaluated itself and never stands for another; an
// evaluation cut short by its context is reported as an error and not
// remembered. Keys and fingerprints depend on content only, never on
// order, time or addresses.
//
// It imports translate only (which resources are extended); it runs no
// allocator and holds no snapshot: feasibility numbers the devices and
// keeps a memo per fleet snapshot.
package signature
