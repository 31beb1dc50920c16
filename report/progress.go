package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Size of the progress sparkline, in CSS pixels.
const (
	sparkWidth  = 320
	sparkHeight = 48
)

// progressView is the progress as the webhook's page shows it: the share
// of devices DRA serves now, and its history drawn as a sparkline (an SVG
// polyline drawn here, so that the page loads nothing).
type progressView struct {
	*Progress
	Share, Total  int64
	Width, Height int
	// Points of the polyline ("x,y x,y …"), empty with fewer than two
	// samples; the share (0–100 %) of each sample, oldest first.
	Points string
	// Baseline is the y of 0 %.
	Baseline int
	From, To string
	Desc     string
}

func newProgressView(p *Progress) *progressView {
	if p == nil {
		return nil
	}
	v := &progressView{Progress: p, Share: p.Share(), Total: p.DRA + p.DevicePlugin, Width: sparkWidth, Height: sparkHeight, Baseline: sparkHeight - 1}
	h := p.History
	if len(h) == 0 {
		v.Desc = "No sample yet."
		return v
	}
	v.From, v.To = h[0].Time.UTC().Format("2006-01-02 15:04 MST"), h[len(h)-1].Time.UTC().Format("2006-01-02 15:04 MST")
	v.Desc = fmt.Sprintf("Share of devices served by DRA over %d samples, from %d%% at %s to %d%% at %s.", len(h), h[0].Share(), v.From, h[len(h)-1].Share(), v.To)
	if len(h) < 2 {
		return v
	}
	pts := make([]string, 0, len(h))
	for i, s := range h {
		x := float64(i) * float64(sparkWidth-2) / float64(len(h)-1)
		y := float64(sparkHeight-2) * float64(100-s.Share()) / 100
		pts = append(pts, strconv.FormatFloat(x+1, 'f', 1, 64)+","+strconv.FormatFloat(y+1, 'f', 1, 64))
	}
	v.Points = strings.Join(pts, " ")
	return v
}
