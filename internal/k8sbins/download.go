package k8sbins

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The layouts of the official downloads, as their projects publish them:
//
//   - Kubernetes: every binary of a release at <base>/<v>/bin/<os>/<arch>/<name> with its
//     checksums beside it in <name>.sha256 and <name>.sha512, each holding the hex digest
//     alone (kubernetes/website, content/en/docs/tasks/tools/install-kubectl-linux.md:
//     `curl -LO https://dl.k8s.io/release/<v>/bin/linux/amd64/kubectl` and `.../kubectl.sha256`,
//     checked with `echo "$(cat kubectl.sha256)  kubectl" | sha256sum --check`); the server
//     binaries (kube-apiserver, kube-controller-manager, kube-scheduler) sit beside kubectl.
//   - etcd: <base>/<v>/etcd-<v>-<os>-<arch>.tar.gz (a .zip for darwin), holding the directory
//     etcd-<v>-<os>-<arch>/ with etcd, etcdctl and etcdutl (etcd-io/etcd,
//     scripts/release_notes.tpl.txt), and <base>/<v>/SHA256SUMS, the output of
//     `shasum -a 256` over the release's archives: "<hex>  <file>" per line (etcd-io/etcd,
//     scripts/release.sh, "Generate SHA256SUMS").

// Download fetches the official kube-apiserver, kube-controller-manager and kube-scheduler of
// o.Kubernetes and etcd of the pinned release into the cache, verifies each against its
// published checksum, and returns the directory. A file whose checksum differs is removed
// and the error says what was expected and what came; a download cut short is resumed with
// an HTTP Range request, in this run (o.Attempts) or the next.
func Download(ctx context.Context, o Options) (string, error) {
	o = o.withDefaults()
	etcd := Pinned().Etcd
	dir := o.downloadDir()
	return intoCache(dir, true, func(tmp string) error {
		fmt.Fprintf(o.Progress, "k8sbins: downloading the control plane %s (etcd %s) into %s from %s and %s\n", o.Kubernetes, etcd, dir, o.KubernetesURL, o.EtcdURL)
		began := time.Now()
		for _, name := range Required[1:] {
			url := fmt.Sprintf("%s/%s/bin/%s/%s/%s", strings.TrimRight(o.KubernetesURL, "/"), o.Kubernetes, runtime.GOOS, runtime.GOARCH, name)
			sum, err := fetchText(ctx, o, url+".sha512")
			if err != nil {
				return err
			}
			want, err := digestOf(sum, name)
			if err != nil {
				return fmt.Errorf("%s.sha512: %w", url, err)
			}
			if err := fetchVerified(ctx, o, url, filepath.Join(tmp, name), sha512.New, want); err != nil {
				return err
			}
		}
		if err := downloadEtcd(ctx, o, etcd, tmp); err != nil {
			return err
		}
		stamp := fmt.Sprintf("kubernetes %s\netcd %s\ndownloaded %s in %.0f s from %s and %s by claimbridge\n", o.Kubernetes, etcd,
			time.Now().UTC().Format(time.RFC3339), time.Since(began).Seconds(), o.KubernetesURL, o.EtcdURL)
		return os.WriteFile(filepath.Join(tmp, stampFile), []byte(stamp), 0o600)
	})
}

// downloadEtcd fetches etcd's release archive, checks it against SHA256SUMS and takes etcd
// out of it into dir.
func downloadEtcd(ctx context.Context, o Options, v, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err == nil {
		return nil // taken out in an earlier attempt, after its archive was verified
	}
	base := strings.TrimRight(o.EtcdURL, "/") + "/" + v
	stem := fmt.Sprintf("etcd-%s-%s-%s", v, runtime.GOOS, runtime.GOARCH)
	archive := stem + ".tar.gz"
	sums, err := fetchText(ctx, o, base+"/SHA256SUMS")
	if err != nil {
		return err
	}
	want, err := digestOf(sums, archive)
	if err != nil {
		return fmt.Errorf("%s/SHA256SUMS: %w", base, err)
	}
	path := filepath.Join(dir, archive)
	if err := fetchVerified(ctx, o, base+"/"+archive, path, sha256.New, want); err != nil {
		return err
	}
	if err := untarFile(path, stem+"/etcd", filepath.Join(dir, "etcd")); err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	return os.Remove(path)
}

// digestOf is the hex digest a checksum file gives for file: the file's only word (the
// Kubernetes layout), or the first word of the line that names it ("<hex>  <file>", as
// sha256sum and shasum write it, a "*" before binary files).
func digestOf(sums, file string) (string, error) {
	lines := strings.Split(strings.TrimSpace(sums), "\n")
	if f := strings.Fields(sums); len(f) == 1 && len(lines) == 1 {
		return strings.ToLower(f[0]), nil
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 2 && strings.TrimPrefix(f[1], "*") == file {
			return strings.ToLower(f[0]), nil
		}
	}
	return "", fmt.Errorf("no checksum of %s", file)
}

// fetchText GETs a small text file (a checksum file).
func fetchText(ctx context.Context, o Options, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return "", err // *url.Error names the URL
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	return string(data), nil
}

// fetchVerified downloads url to path through path.part, resuming a part left by an
// earlier attempt with a Range request, checks its digest against want, and renames it to
// path (executable). A digest that differs removes the part.
func fetchVerified(ctx context.Context, o Options, url, path string, newHash func() hash.Hash, want string) error {
	part := path + ".part"
	name := filepath.Base(path)
	var err error
	for attempt := 1; attempt <= o.Attempts; attempt++ {
		if err = fetchPart(ctx, o, url, part); err == nil || ctx.Err() != nil {
			break
		}
		fmt.Fprintf(o.Progress, "k8sbins: %s: %v (attempt %d of %d; the next resumes it)\n", name, err, attempt, o.Attempts)
	}
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	got, err := digestFile(part, newHash)
	if err != nil {
		return err
	}
	if got != want {
		_ = os.Remove(part)
		return fmt.Errorf("download %s: checksum mismatch: expected %s, got %s (the file is removed)", url, want, got)
	}
	if err := os.Chmod(part, 0o755); err != nil {
		return err
	}
	return os.Rename(part, path)
}

// fetchPart brings part to the full length of url's content: all of it, or, when part
// holds a beginning already, the rest with a Range request (a server that ignores Range
// sends everything, which replaces the part). A body shorter than the length the server
// announced is an error that leaves what came in part.
func fetchPart(ctx context.Context, o Options, url, part string) error {
	var have int64
	if fi, err := os.Stat(part); err == nil {
		have = fi.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	flags, total := os.O_CREATE|os.O_WRONLY|os.O_TRUNC, resp.ContentLength
	switch {
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return nil // the part is whole already; the checksum says whether it is right
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		if start, size, ok := contentRange(resp.Header.Get("Content-Range")); !ok || start != have {
			return fmt.Errorf("GET %s: range from %d answered with Content-Range %q", url, have, resp.Header.Get("Content-Range"))
		} else if size >= 0 {
			total = size
		}
		flags = os.O_WRONLY | os.O_APPEND
		fmt.Fprintf(o.Progress, "k8sbins: %s: resuming at %s\n", filepath.Base(url), mb(have))
	case resp.StatusCode == http.StatusOK:
		have = 0
	default:
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	p := newProgress(o, filepath.Base(url), have, total)
	n, err := io.Copy(f, io.TeeReader(resp.Body, p))
	p.stop()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("truncated after %s of %s: %w", mb(have+n), mb(total), err)
	}
	if total >= 0 && have+n != total {
		return fmt.Errorf("truncated: %s of %s", mb(have+n), mb(total))
	}
	return nil
}

// contentRange reads "bytes START-END/SIZE" (SIZE -1 for "*").
func contentRange(h string) (start, size int64, ok bool) {
	r, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, false
	}
	span, total, found := strings.Cut(r, "/")
	first, _, found2 := strings.Cut(span, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	size = -1
	if total != "*" {
		if size, err = strconv.ParseInt(total, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, size, true
}

func digestFile(path string, newHash func() hash.Hash) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := newHash()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// untarFile takes the regular file name out of a .tar.gz into dst, executable.
func untarFile(archive, name, dst string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("no %s in the archive", name)
		}
		if err != nil {
			return err
		}
		if strings.TrimPrefix(h.Name, "./") == name && h.Typeflag == tar.TypeReg {
			return copyTo(dst, tr)
		}
	}
}

// progress says on o.Progress, every o.ProgressEvery, how much of a download has come, how
// fast, and how long the rest should take; a download that stalls says so too.
type progress struct {
	done  atomic.Int64
	quit  chan struct{}
	ended chan struct{}
}

func newProgress(o Options, name string, have, total int64) *progress {
	p := &progress{quit: make(chan struct{}), ended: make(chan struct{})}
	p.done.Store(have)
	start := time.Now()
	go func() {
		defer close(p.ended)
		t := time.NewTicker(o.ProgressEvery)
		defer t.Stop()
		last, lastMoved := have, time.Now()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
			d := p.done.Load()
			if d != last {
				last, lastMoved = d, time.Now()
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "k8sbins:   %s: %s", name, mb(d))
			if total > 0 {
				fmt.Fprintf(&b, " of %s (%d%%)", mb(total), d*100/total)
			}
			rate := float64(d-have) / time.Since(start).Seconds()
			if rate > 0 {
				fmt.Fprintf(&b, ", %s/s", mb(int64(rate)))
				if total > 0 {
					fmt.Fprintf(&b, ", about %s left", (time.Duration(float64(total-d)/rate) * time.Second).Round(time.Second))
				}
			}
			if stalled := time.Since(lastMoved); stalled >= o.ProgressEvery {
				fmt.Fprintf(&b, "; nothing received for %s", stalled.Round(time.Second))
			}
			b.WriteString("\n")
			_, _ = o.Progress.Write(b.Bytes())
		}
	}()
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.done.Add(int64(len(b)))
	return len(b), nil
}

func (p *progress) stop() {
	close(p.quit)
	<-p.ended
}

func mb(n int64) string {
	if n < 0 {
		return "an unknown size"
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
