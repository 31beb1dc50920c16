package decide

import (
	"fmt"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// ReasonNodeLabelUnchecked: the translation removes node labels that no
// device attribute expresses (NodeLabelDropped: nvidia.com/gpu.count,
// nvidia.com/mig.strategy mixed), and there is no fleet to run the
// placement check against (`claimbridge translate`, `explain`, `audit`,
// `krm` without --fleet): the pod could land on nodes the label excluded,
// and nothing would say so. KeepLegacy.
const ReasonNodeLabelUnchecked reason.Code = "NodeLabelUnchecked"

// uncheckedLabels keeps a translated pod legacy when no fleet checks its
// placement (in.Checker nil) and the translation removed labels no device
// attribute expresses: such a label narrowed where the pod as submitted
// could land (nvidia.com/gpu.count=8 keeps a one-GPU pod off 1-GPU nodes),
// and without it the translation would widen that silently. Offline
// without a fleet claimbridge never widens. A policy that keeps translated
// labels on the pod (keepTranslatedNodeLabels: the DRA nodes carry them)
// drops none, and a policy whose placement rule is Off accepts any
// difference; neither is kept here. One reason per label, the first
// decides.
func (d *Decision) uncheckedLabels(in Input) {
	if d.Outcome != reason.OutcomeTranslate || in.Checker != nil || placementRule(in.Policy) == v1alpha1.PlacementOff {
		return
	}
	var out []reason.Reason
	for _, r := range d.Translation.Reasons {
		if r.Code != translate.ReasonNodeLabelDropped {
			continue
		}
		out = append(out, reason.Reason{Code: ReasonNodeLabelUnchecked, Severity: reason.SeverityWarning, Field: r.Field,
			Message: fmt.Sprintf("no device attribute expresses this label, so the translation would remove it and the pod could land on nodes it excludes; with no fleet to run the placement check against (--fleet), nothing checks where the translation lands, and the pod keeps its device-plugin resources (placement rule %s)", placementRule(in.Policy))})
	}
	if len(out) > 0 {
		d.keep(out...)
	}
}
