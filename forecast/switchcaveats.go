package forecast

// Hazards of the switch itself that the platform shows: a Helm release
// whose uninstall deletes the classes the translations use, and workloads
// pinned to the RuntimeClass the device plugin's stack installs.

import (
	"cmp"
	"fmt"
	"github.com/claimbridge/claimbridge/translate"
	"maps"
	"slices"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
)

// nvidiaRuntimeClass is the RuntimeClass the GPU Operator's device-plugin
// stack (its container toolkit) installs; on nodes that inject devices by
// CDI alone it is gone.
const nvidiaRuntimeClass = "nvidia"

// switchCaveats are the caveats of the switch the workloads and the
// platform show.
func switchCaveats(j *CutoverForecast, plat *platform.Platform) []cutover.Caveat {
	var out []cutover.Caveat
	if c, ok := releaseCaveat(j, plat); ok {
		out = append(out, c)
	}
	if c, ok := runtimeClassCaveat(j.Workloads); ok {
		out = append(out, c)
	}
	if mode, fact := plat.Shares("nvidia-gpu"); mode.Mode == v1alpha1.SharesUnlimited || mode.Mode == v1alpha1.SharesMemory {
		out = append(out, cutover.Caveat{
			Text: fmt.Sprintf("The NVIDIA DRA driver runs --consumable-shares=%s%s: every GPU of the installation allows multiple allocations and publishes its memory and no shares capacity. %s "+
				"A claim for a whole GPU that asks for no memory takes all of it in memory mode but none in unlimited mode, where several such claims share one GPU: "+
				"claimbridge keeps whole GPUs off GPUs shared for nothing, so keep unlimited off the nodes whose GPUs pods must have to themselves.", mode.Mode, fact.Said(), memorySharesSaid(j.policy, mode.Mode)),
			Source: "kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/consumable_shares.go (applyConsumableShares)",
		})
	}
	return out
}

// releaseCaveat warns when the classes the translations use belong to a
// Helm release (detected from the classes' meta.helm.sh annotations): a
// switch that uninstalls that release before the next install path
// creates its classes leaves every claim of them unsatisfiable meanwhile.
func releaseCaveat(j *CutoverForecast, plat *platform.Platform) (cutover.Caveat, bool) {
	if plat == nil {
		return cutover.Caveat{}, false
	}
	used := map[string]int{}
	for _, w := range j.Workloads {
		d := w.Decision
		if d == nil || d.Outcome != reason.OutcomeTranslate || d.Translation == nil || d.Translation.Template == nil {
			continue
		}
		for _, r := range d.Translation.Template.Spec.Spec.Devices.Requests {
			if r.Exactly != nil {
				used[r.Exactly.DeviceClassName]++
			}
			for _, s := range r.FirstAvailable {
				used[s.DeviceClassName]++
			}
		}
	}
	releases := map[string][]string{}
	for _, d := range plat.Drivers {
		for _, c := range d.Classes {
			if c.HelmRelease != "" && used[c.Name] > 0 {
				releases[c.HelmRelease] = append(releases[c.HelmRelease], c.Name)
			}
		}
	}
	if len(releases) == 0 {
		return cutover.Caveat{}, false
	}
	var said []string
	for _, rel := range slices.Sorted(maps.Keys(releases)) {
		said = append(said, fmt.Sprintf("%s (Helm release %s)", strings.Join(releases[rel], ", "), rel))
	}
	return cutover.Caveat{
		Text: "The translations use DeviceClasses " + strings.Join(said, "; ") + ": uninstalling that release — moving from the standalone NVIDIA DRA driver chart to the GPU Operator's DRA mode, say — deletes them, " +
			"and until the next install creates them again no claim of theirs can be allocated: keep the release until the classes exist under their new owner, or create them first.",
		Source: "the classes' meta.helm.sh/release-name annotations, detected from the cluster; Helm deletes a release's resources on uninstall (a cutover seen in nicolerenee/infra#2391)",
	}, true
}

// runtimeClassCaveat lists the workloads pinned to RuntimeClass nvidia.
func runtimeClassCaveat(ws []Workload) (cutover.Caveat, bool) {
	var pinned []string
	for _, w := range ws {
		if w.Pod != nil && w.Pod.Spec.RuntimeClassName != nil && *w.Pod.Spec.RuntimeClassName == nvidiaRuntimeClass {
			pinned = append(pinned, w.Key)
		}
	}
	if len(pinned) == 0 {
		return cutover.Caveat{}, false
	}
	slices.Sort(pinned)
	more := ""
	if len(pinned) > 10 {
		more = fmt.Sprintf(" and %d more", len(pinned)-10)
		pinned = pinned[:10]
	}
	return cutover.Caveat{
		Text: fmt.Sprintf("RuntimeClass %s: %s%s run with runtimeClassName: %s, which the device plugin's stack (the NVIDIA container toolkit) installs. "+
			"Nodes whose DRA driver injects devices by CDI alone may have no such RuntimeClass or handler, and such pods do not start there: drop the field, or keep the RuntimeClass on the switched nodes.",
			nvidiaRuntimeClass, strings.Join(pinned, ", "), more, nvidiaRuntimeClass),
		Source: "the workloads' pod templates; charts pinned to RuntimeClass nvidia broke after such a switch (utkuozdemir/nvidia_gpu_exporter#518)",
	}, true
}

// poolScales are the fleet's node pools the platform knows (or names) an
// autoscaler of, with what each does for a pod with claims from zero.
func poolScales(j *CutoverForecast, plat *platform.Platform) []cutover.PoolScale {
	if plat == nil {
		return nil
	}
	byName := map[string]*cutover.PoolScale{}
	for _, n := range j.Before.Inventory.Nodes {
		pool := plat.PoolOf(n.Labels)
		if pool == nil || pool.Autoscaler.Source == "" {
			continue
		}
		name := "every node"
		if pool.Label != "" {
			name = pool.Label + "=" + n.Labels[pool.Label]
		}
		ps, ok := byName[name]
		if !ok {
			ps = &cutover.PoolScale{Pool: name, Autoscaler: cmp.Or(pool.Autoscaler.Value, "unknown") + pool.Autoscaler.Said(), FromZero: "unknown"}
			if yes, remedy, known := pool.FromZero(); known {
				ps.FromZero, ps.Remedy = "no", remedy
				if yes {
					ps.FromZero = "yes"
				}
			}
			byName[name] = ps
		}
		ps.Nodes++
	}
	var out []cutover.PoolScale
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out
}

// memorySharesSaid says what a translated share asks of a GPU shared by
// memory under the policy's memoryShares.
func memorySharesSaid(p *translate.Policy, mode string) string {
	n := int64(0)
	if p != nil {
		n = p.MemoryShares("nvidia-gpu")
	}
	switch {
	case n > 0:
		return fmt.Sprintf("A translated share asks for 1/%d of its GPU's memory (the policy's memoryShares), so at most %d pods share a GPU, as %d time-slicing replicas did.", n, n, n)
	case mode == v1alpha1.SharesMemory:
		return "A time-sliced pod stays as submitted: nothing says how much memory its share takes, and one that asks for none takes the whole GPU; set the policy's memoryShares to the replicas the workloads ran with."
	}
	return "A translated share asks for no memory, so any number of pods share a GPU; set the policy's memoryShares to the replicas the workloads ran with to cap them."
}
