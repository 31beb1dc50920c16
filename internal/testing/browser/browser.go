// Package browser runs a headless Chromium for the tests of the HTML report:
// it loads a page, lets its scripts run, and returns the DOM, a screenshot
// or a PDF. It drives the browser's own command line (--dump-dom,
// --screenshot, --print-to-pdf), so it needs nothing but the browser, which
// hack/chromium.sh installs from the distribution's packages.
package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// EnvPath names the browser to use; hack/chromium.sh prints one.
const EnvPath = "CLAIMBRIDGE_CHROMIUM"

// names are looked up in PATH when EnvPath is not set.
var names = []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"}

// Chromium is a headless browser binary.
type Chromium struct {
	Path string
	// Timeout bounds one run. Default 60s.
	Timeout time.Duration
}

// ErrNotFound means there is no browser to run.
var ErrNotFound = errors.New("no Chromium: set " + EnvPath + " or run hack/chromium.sh (make unit does) to install it")

// Find returns the browser named by CLAIMBRIDGE_CHROMIUM, else the first
// of chromium, chromium-browser, google-chrome in PATH.
func Find() (*Chromium, error) {
	if p := os.Getenv(EnvPath); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvPath, p, err)
		}
		return &Chromium{Path: path}, nil
	}
	for _, n := range names {
		if path, err := exec.LookPath(n); err == nil {
			return &Chromium{Path: path}, nil
		}
	}
	return nil, ErrNotFound
}

// ForTest returns the browser, or skips the test saying how to get one.
// With CLAIMBRIDGE_REQUIRE_CHROMIUM=1 a missing browser fails the test.
func ForTest(t testing.TB) *Chromium {
	t.Helper()
	c, err := Find()
	if err != nil {
		if os.Getenv("CLAIMBRIDGE_REQUIRE_CHROMIUM") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return c
}

// run starts the browser once, with a fresh profile, on url.
func (c *Chromium) run(ctx context.Context, width, height int, url string, args ...string) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	profile, err := os.MkdirTemp("", "claimbridge-chromium-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(profile) }()
	all := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--mute-audio", "--force-color-profile=srgb",
		"--user-data-dir=" + profile,
		"--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height),
		// Scripts get time to run before the DOM is dumped or the picture taken.
		"--virtual-time-budget=5000",
	}
	all = append(all, args...)
	all = append(all, url)
	cmd := exec.CommandContext(ctx, c.Path, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The browser wants a writable home for its caches.
	cmd.Env = append(os.Environ(), "HOME="+profile)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("chromium %s: %w\n%s", url, err, tail(stderr.Bytes(), 2000))
	}
	return stdout.Bytes(), nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// DumpDOM loads url in a window of the given size and returns the DOM
// after its scripts ran, serialised as HTML.
func (c *Chromium) DumpDOM(ctx context.Context, url string, width, height int) (string, error) {
	out, err := c.run(ctx, width, height, url, "--dump-dom")
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return "", fmt.Errorf("chromium %s: empty DOM", url)
	}
	return string(out), nil
}

// Screenshot saves a PNG of url as seen in a window width wide and at most
// height tall; the blank space below the page's end is cut off.
func (c *Chromium) Screenshot(ctx context.Context, url, path string, width, height int) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := c.run(ctx, width, height, url, "--screenshot="+abs); err != nil {
		return err
	}
	return trimBottom(abs)
}

// PrintPDF saves url printed as a PDF (the page's @page size and print
// styles apply).
func (c *Chromium) PrintPDF(ctx context.Context, url, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	_, err = c.run(ctx, 1280, 1024, url, "--print-to-pdf="+abs, "--no-pdf-header-footer")
	return err
}

// trimBottom cuts the rows at the bottom of a PNG that have the colour of
// its bottom-left pixel, keeping a margin.
func trimBottom(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	img, err := png.Decode(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	b := img.Bounds()
	bg := color.RGBAModel.Convert(img.At(b.Min.X, b.Max.Y-1))
	last := b.Min.Y
rows:
	for y := b.Max.Y - 1; y >= b.Min.Y; y-- {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) != bg {
				last = y
				break rows
			}
		}
	}
	end := min(b.Max.Y, last+24)
	if end >= b.Max.Y {
		return nil
	}
	sub, ok := img.(interface {
		SubImage(r image.Rectangle) image.Image
	})
	if !ok {
		return nil
	}
	var out bytes.Buffer
	if err := png.Encode(&out, sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Max.X, end))); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
