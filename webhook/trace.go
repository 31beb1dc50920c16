package webhook

import (
	"context"
	"runtime/metrics"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/decide"
)

// Stage is a part of an admission, as the slow-admission log and
// claimbridge_admission_stage_seconds name it.
type Stage int

// The stages of an admission, in the order they run.
const (
	// StageLookup: the namespace's mode, from the cache or, for a
	// namespace newer than the cache, one read from the API.
	StageLookup Stage = iota
	// StageDecode: the pod decoded from the request.
	StageDecode
	// StageWait: waiting for the decisions before it that hold devices
	// (enforce mode).
	StageWait
	// StageTakeOver: holding the devices of pods other replicas translated.
	StageTakeOver
	// StageSnapshot: the fleet's snapshot with the devices held.
	StageSnapshot
	// StageTranslate, StagePlacement, StageVerdict: the decision's parts;
	// StageDecide what else it spent.
	StageTranslate
	StagePlacement
	StageVerdict
	StageDecide
	// StageForward: the decision sent to the replica that leads, on one
	// that does not (PodHandler.Leader).
	StageForward
	// StageTemplate: the ResourceClaimTemplate ensured (enforce mode; an
	// API call when neither the cache nor this replica has it).
	StageTemplate
	// StageRespond: the patch, warnings, annotations, report row and Event.
	StageRespond
	stageCount
)

var stageNames = [stageCount]string{"lookup", "decode", "wait", "takeover", "snapshot", "translate", "placement", "verdict", "decide", "forward", "template", "respond"}

func (s Stage) String() string { return stageNames[s] }

// Stages lists every stage, in order.
func Stages() []Stage {
	all := make([]Stage, stageCount)
	for i := range all {
		all[i] = Stage(i)
	}
	return all
}

// trace is where one admission's time went. Each mark charges the time
// since the previous one to a stage; the garbage collector's cycles that
// completed meanwhile are counted, since a GC's assists and pauses charge
// their time to whatever stage runs.
type trace struct {
	start, last time.Time
	spent       [stageCount]time.Duration
	gcBefore    uint64
}

const gcCyclesMetric = "/gc/cycles/total:gc-cycles"

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: gcCyclesMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func startTrace() *trace {
	now := time.Now()
	return &trace{start: now, last: now, gcBefore: gcCycles()}
}

// mark charges the time since the last mark to s.
func (t *trace) mark(s Stage) {
	now := time.Now()
	t.spent[s] += now.Sub(t.last)
	t.last = now
}

// decided charges the time since the last mark to the decision's parts,
// the rest of it to StageDecide.
func (t *trace) decided(d decide.Durations) {
	now := time.Now()
	all := now.Sub(t.last)
	t.last = now
	parts := d.Translate + d.Placement + d.Verdict
	t.spent[StageTranslate] += d.Translate
	t.spent[StagePlacement] += d.Placement
	t.spent[StageVerdict] += d.Verdict
	t.spent[StageDecide] += max(all-parts, 0)
}

// slowest is the stage that took longest.
func (t *trace) slowest() Stage {
	var worst Stage
	for s := range stageCount {
		if t.spent[s] > t.spent[worst] {
			worst = s
		}
	}
	return worst
}

// done observes the stages and, for an admission over h.SlowAdmission,
// logs where its time went and counts it by its slowest stage.
func (h *PodHandler) done(ctx context.Context, t *trace, d decision) {
	total := time.Since(t.start)
	if h.Metrics != nil {
		if d.mode != "" {
			h.Metrics.AdmissionDuration.WithLabelValues(string(d.mode)).Observe(total.Seconds())
		}
		for s := range stageCount {
			if t.spent[s] > 0 {
				h.Metrics.AdmissionStages.WithLabelValues(s.String()).Observe(t.spent[s].Seconds())
			}
		}
	}
	if h.SlowAdmission <= 0 || total < h.SlowAdmission {
		return
	}
	worst := t.slowest()
	if h.Metrics != nil {
		h.Metrics.SlowAdmissions.WithLabelValues(worst.String()).Inc()
	}
	// The request's logger names the pod (controller-runtime's admission
	// logger has its namespace, name and request ID).
	kv := []any{"mode", d.mode, "outcome", d.outcome, "reason", d.reason,
		"total", total, "slowest", worst.String(), "gcCycles", gcCycles() - t.gcBefore}
	for s := range stageCount {
		if t.spent[s] > 0 {
			kv = append(kv, s.String(), t.spent[s])
		}
	}
	log.FromContext(ctx).Info("slow admission", kv...)
}
