package report

import (
	"fmt"
	"strings"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
)

// remedy is the one-line remedy of a blocking reason for rows of one
// hardware kind, from the catalog: Infeasible is split by the verdict's
// code, whose remedies name the hardware (%[1]s).
func remedy(reasons reason.Catalog, code reason.Code, verdictCode, hardware string, fleet *FleetSummary) string {
	hw := hardware
	if hw == "" {
		hw = "these devices"
	}
	if code != decide.ReasonInfeasible {
		if r := reasons.Remedy(code); r != "" {
			return r
		}
		return "see the reasons of the rows (claimbridge explain shows the whole decision)"
	}
	if verdictCode == string(feasibility.ReasonNoMatchingDevices) || verdictCode == "" {
		if nodes := devicePluginNodes(fleet, hardware); nodes != "" {
			return fmt.Sprintf("no DRA node publishes %s — move the device-plugin nodes that have it (%s) to the DRA driver first", hw, nodes)
		}
	}
	if verdictCode == "" {
		verdictCode = string(feasibility.ReasonNoMatchingDevices)
	}
	if r := reasons.Remedy(reason.Code(verdictCode)); r != "" {
		return fmt.Sprintf(r, hw)
	}
	return "see the reasons of the rows (claimbridge explain shows the whole decision)"
}

// devicePluginNodes names the device-plugin nodes of a hardware kind.
func devicePluginNodes(fleet *FleetSummary, hardware string) string {
	if fleet == nil || hardware == "" {
		return ""
	}
	var names []string
	n := 0
	for _, g := range fleet.Groups {
		if g.Via == ViaDevicePlugin && g.Kind == hardware {
			names = append(names, g.Names...)
			n += g.Nodes
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(names) {
		return fmt.Sprintf("%s and %d more", strings.Join(names, ", "), n-len(names))
	}
	return strings.Join(names, ", ")
}
