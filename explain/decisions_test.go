package explain

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestUnseenTellsABoundPodFromAnOldOne: a pod bound to a node with no
// decision was bound at creation when it was created once the webhook
// watched — its creation time has whole seconds, so one created in the
// second the webhook began counts as after — and was not seen otherwise.
func TestUnseenTellsABoundPodFromAnOldOne(t *testing.T) {
	started := time.Date(2026, 12, 6, 4, 58, 9, 449_000_000, time.UTC)
	for name, c := range map[string]struct {
		created time.Time
		want    reason.Code
	}{
		"created a minute after":           {started.Add(time.Minute), translate.ReasonNodeNamePreset},
		"created in the second it started": {started.Truncate(time.Second), translate.ReasonNodeNamePreset},
		"created the second before":        {started.Truncate(time.Second).Add(-time.Second), ReasonNotSeenByWebhook},
	} {
		t.Run(name, func(t *testing.T) {
			p := builders.MakePod("pinned", "ns").Container("app").Limit("nvidia.com/gpu", "1").NodeName("n0").Obj()
			p.CreationTimestamp = metav1.NewTime(c.created)
			code, _, ok := Unseen(p, translate.DefaultPolicy(), started)
			if !ok || code != c.want {
				t.Errorf("%s (ok %t), want %s", code, ok, c.want)
			}
		})
	}
}
