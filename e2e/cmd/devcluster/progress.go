package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/image"
)

// progress numbers devcluster's steps ("[2/4] …") and times them.
type progress struct {
	w     io.Writer
	total int
	// every is how often a running step says it is still running. Default 30 s.
	every time.Duration

	n     int
	start time.Time
}

// step announces the next step and returns the function that ends it. Until then a line every
// p.every says the step is still running, with its elapsed time and devcluster's.
func (p *progress) step(what string) (done func()) {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.n++
	label := fmt.Sprintf("[%d/%d]", p.n, p.total)
	fmt.Fprintf(p.w, "devcluster: %s %s\n", label, what)
	begin := time.Now()
	stop := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		every := p.every
		if every <= 0 {
			every = 30 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(p.w, "devcluster: %s still running (%s; %s since devcluster started)\n",
					label, seconds(time.Since(begin)), seconds(time.Since(p.start)))
			}
		}
	}()
	return func() {
		close(stop)
		<-ended
		fmt.Fprintf(p.w, "devcluster: %s done in %s\n", label, seconds(time.Since(begin)))
	}
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// buildImage makes the claimbridge binary binary.Start runs available as a step of its own:
// the image for this machine's platform (as make image builds it: go build of cmd/claimbridge,
// seconds with a warm Go build cache, minutes on an empty one), written into dir/image and
// named by $CLAIMBRIDGE_IMAGE, where binary.Start takes the binary from. An image already named
// there (make image's) is used as it is.
func buildImage(ctx context.Context, p *progress, dir string) error {
	if layout := os.Getenv(binary.ImageEnv); layout != "" {
		done := p.step(fmt.Sprintf("claimbridge: the binary of the image in %s=%s (not built)", binary.ImageEnv, layout))
		done()
		return nil
	}
	platform := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	done := p.step("building claimbridge for " + image.PlatformString(platform) +
		" (go build ./cmd/claimbridge, as make image does: 291 s measured on an empty Go build cache on 2 cores, about 7 s after)")
	b, err := image.Build(ctx, image.Options{Platforms: []v1.Platform{platform}})
	if err != nil {
		return fmt.Errorf("build claimbridge: %w", err)
	}
	out, err := image.Write(filepath.Join(dir, "image"), b)
	if err != nil {
		return fmt.Errorf("build claimbridge: %w", err)
	}
	if err := os.Setenv(binary.ImageEnv, out.Layout); err != nil {
		return err
	}
	done()
	return nil
}
