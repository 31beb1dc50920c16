package k8sbins

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/internal/testing/syncbuffer"
)

// release is a release site on disk: the Kubernetes binaries with their .sha512 files and
// etcd's archive with SHA256SUMS, laid out as dl.k8s.io and etcd's GitHub releases lay
// them out, each binary a different executable of a few MB.
type release struct {
	root  string
	files map[string][]byte // binary name → content
}

func newRelease(t *testing.T) *release {
	t.Helper()
	r := &release{root: t.TempDir(), files: map[string][]byte{}}
	k8s, etcd := Pinned().Kubernetes, Pinned().Etcd
	bin := filepath.Join(r.root, "k8s", k8s, "bin", runtime.GOOS, runtime.GOARCH)
	for _, name := range Required {
		content := append([]byte("#!/bin/sh\necho "+name+"\nexit 0\n"), randomBytes(t, 3<<20)...)
		r.files[name] = content
		if name == "etcd" {
			continue
		}
		write(t, filepath.Join(bin, name), content)
		sum := sha512.Sum512(content)
		write(t, filepath.Join(bin, name+".sha512"), []byte(hex.EncodeToString(sum[:])))
	}
	stem := fmt.Sprintf("etcd-%s-%s-%s", etcd, runtime.GOOS, runtime.GOARCH)
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	for _, f := range []string{"etcdctl", "etcd", "README.md"} {
		content := r.files["etcd"]
		if f != "etcd" {
			content = []byte("not etcd")
		}
		if err := tw.WriteHeader(&tar.Header{Name: stem + "/" + f, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.root, "etcd", etcd, stem+".tar.gz"), archive.Bytes())
	sum := sha256.Sum256(archive.Bytes())
	sums := fmt.Sprintf("%s  etcd-%s-windows-amd64.zip\n%s  %s.tar.gz\n", strings.Repeat("0", 64), etcd, hex.EncodeToString(sum[:]), stem)
	write(t, filepath.Join(r.root, "etcd", etcd, "SHA256SUMS"), []byte(sums))
	return r
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// server serves the release site with http.FileServer (which honours Range requests) and
// records every request; cut, when it returns n ≥ 0 for a request, sends only n bytes of the
// body after announcing all of it, and closes the connection.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "path" or "path range"
	cut      func(path string, nth int) int
}

func serve(t *testing.T, r *release) *server {
	t.Helper()
	s := &server{}
	files := http.FileServer(http.Dir(r.root))
	count := map[string]int{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, strings.TrimSpace(req.URL.Path+" "+req.Header.Get("Range")))
		count[req.URL.Path]++
		n := -1
		if s.cut != nil {
			n = s.cut(req.URL.Path, count[req.URL.Path])
		}
		s.mu.Unlock()
		if n >= 0 && req.Header.Get("Range") == "" {
			data, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(path.Clean(req.URL.Path))))
			if err != nil {
				http.NotFound(w, req)
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(data[:n]) // the server closes a connection whose body fell short
			return
		}
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *server) options(t *testing.T) Options {
	t.Helper()
	t.Setenv(AssetsEnv, "")
	t.Setenv(BinDirEnv, "")
	return Options{KubernetesURL: s.URL + "/k8s", EtcdURL: s.URL + "/etcd", CacheDir: t.TempDir(), Progress: testWriter{t}, ProgressEvery: 50 * time.Millisecond}
}

// checkBinaries: dir holds every required binary with the release's content, executable.
func checkBinaries(t *testing.T, r *release, dir string) {
	t.Helper()
	for _, name := range Required {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, r.files[name]) {
			t.Errorf("%s: %d bytes, not the release's %d", name, len(got), len(r.files[name]))
		}
	}
	if err := complete(dir); err != nil {
		t.Error(err)
	}
}

func TestADownloadIsVerifiedCachedAndFoundAgainWithoutTheNetwork(t *testing.T) {
	r := newRelease(t)
	s := serve(t, r)
	o := s.options(t)
	found, err := Find(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if found.How != "download" || found.Kubernetes != Pinned().Kubernetes {
		t.Errorf("found %+v, want a download of %s", found, Pinned().Kubernetes)
	}
	checkBinaries(t, r, found.Dir)
	asked := len(s.log())
	again, err := Find(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Found{Dir: found.Dir, Kubernetes: found.Kubernetes, How: "cache"}, again); diff != "" {
		t.Errorf("second Find (-want,+got):\n%s", diff)
	}
	if n := len(s.log()); n != asked {
		t.Errorf("the second Find sent %d requests, want none: %v", n-asked, s.log()[asked:])
	}
}

func TestAWrongChecksumIsAnErrorThatSaysBothAndRemovesTheFile(t *testing.T) {
	r := newRelease(t)
	bin := filepath.Join(r.root, "k8s", Pinned().Kubernetes, "bin", runtime.GOOS, runtime.GOARCH)
	wrong := strings.Repeat("ab", sha512.Size)
	write(t, filepath.Join(bin, "kube-scheduler.sha512"), []byte(wrong+"\n"))
	s := serve(t, r)
	o := s.options(t)
	_, err := Download(t.Context(), o)
	sum := sha512.Sum512(r.files["kube-scheduler"])
	want := "checksum mismatch: expected " + wrong + ", got " + hex.EncodeToString(sum[:])
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one that contains %q", err, want)
	}
	partial := partialDir(o)
	for _, f := range []string{"kube-scheduler", "kube-scheduler.part"} {
		if _, err := os.Stat(filepath.Join(partial, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", f, err)
		}
	}
	if _, err := os.Stat(o.withDefaults().downloadDir()); !os.IsNotExist(err) {
		t.Errorf("the cache directory exists after a failed download (%v)", err)
	}
}

func TestATruncatedDownloadIsDetectedAndKeptToResume(t *testing.T) {
	r := newRelease(t)
	s := serve(t, r)
	half := len(r.files["kube-apiserver"]) / 2
	s.cut = func(p string, _ int) int {
		if strings.HasSuffix(p, "/kube-apiserver") {
			return half
		}
		return -1
	}
	o := s.options(t)
	o.Attempts = 1
	_, err := Download(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %v, want a truncated download", err)
	}
	partial := partialDir(o)
	got, err := os.ReadFile(filepath.Join(partial, "kube-apiserver.part"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, r.files["kube-apiserver"][:half]) {
		t.Errorf("the part holds %d bytes, want the %d that came", len(got), half)
	}
}

func TestAPartialFileIsResumedWithARangeRequest(t *testing.T) {
	r := newRelease(t)
	s := serve(t, r)
	o := s.options(t)
	// An earlier run stopped a third of the way through kube-controller-manager.
	third := len(r.files["kube-controller-manager"]) / 3
	partial := partialDir(o)
	write(t, filepath.Join(partial, "kube-controller-manager.part"), r.files["kube-controller-manager"][:third])
	dir, err := Download(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkBinaries(t, r, dir)
	path := fmt.Sprintf("/k8s/%s/bin/%s/%s/kube-controller-manager", Pinned().Kubernetes, runtime.GOOS, runtime.GOARCH)
	want := fmt.Sprintf("%s bytes=%d-", path, third)
	var asked []string
	for _, l := range s.log() {
		if strings.HasPrefix(l, path+" ") || l == path {
			asked = append(asked, l)
		}
	}
	if diff := cmp.Diff([]string{want}, asked); diff != "" {
		t.Errorf("requests of kube-controller-manager (-want,+got):\n%s", diff)
	}
}

func TestADownloadCutShortIsResumedInTheSameRun(t *testing.T) {
	r := newRelease(t)
	s := serve(t, r)
	half := len(r.files["kube-scheduler"]) / 2
	s.cut = func(p string, nth int) int {
		if strings.HasSuffix(p, "/kube-scheduler") && nth == 1 {
			return half
		}
		return -1
	}
	o := s.options(t)
	dir, err := Download(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkBinaries(t, r, dir)
	path := fmt.Sprintf("/k8s/%s/bin/%s/%s/kube-scheduler", Pinned().Kubernetes, runtime.GOOS, runtime.GOARCH)
	var asked []string
	for _, l := range s.log() {
		if strings.HasPrefix(l, path+" ") || l == path {
			asked = append(asked, l)
		}
	}
	if diff := cmp.Diff([]string{path, fmt.Sprintf("%s bytes=%d-", path, half)}, asked); diff != "" {
		t.Errorf("requests of kube-scheduler (-want,+got):\n%s", diff)
	}
}

func TestADownloadSaysHowFarItIsAndWhenItStalls(t *testing.T) {
	r := newRelease(t)
	var out syncBuffer
	o := Options{ProgressEvery: 20 * time.Millisecond, Progress: &out}
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		data := r.files["kube-apiserver"]
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		_, _ = w.Write(data[:len(data)/4])
		w.(http.Flusher).Flush()
		<-stall
		_, _ = w.Write(data[len(data)/4:])
	}))
	defer srv.Close()
	go func() { time.Sleep(300 * time.Millisecond); close(stall) }()
	o = o.withDefaults()
	if err := fetchPart(t.Context(), o, srv.URL+"/kube-apiserver", filepath.Join(t.TempDir(), "kube-apiserver.part")); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"kube-apiserver: 0.8 MB of 3.1 MB (", "%), ", "MB/s, about ", " left", "nothing received for "} {
		if !strings.Contains(text, want) {
			t.Errorf("progress %q does not say %q", text, want)
		}
	}
}

// TestFindTakesTheGivenDirectoryThenKubebuilderAssetsThenClaimbridgeK8sBin: and the
// release is what kube-apiserver --version says.
func TestFindTakesTheGivenDirectoryThenKubebuilderAssetsThenClaimbridgeK8sBin(t *testing.T) {
	dirs := map[string]string{}
	for _, n := range []string{"flag", "assets", "bin"} {
		dirs[n] = t.TempDir()
		for _, b := range Required {
			write(t, filepath.Join(dirs[n], b), []byte("#!/bin/sh\necho Kubernetes v1.36.4\n"))
			if err := os.Chmod(filepath.Join(dirs[n], b), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, tc := range map[string]struct {
		dir, assets, bin string
		want             Found
	}{
		"the directory given comes first":             {dirs["flag"], dirs["assets"], dirs["bin"], Found{Dir: dirs["flag"], Kubernetes: "v1.36.4", How: "--k8s-bin"}},
		"then KUBEBUILDER_ASSETS":                     {"", dirs["assets"], dirs["bin"], Found{Dir: dirs["assets"], Kubernetes: "v1.36.4", How: "$KUBEBUILDER_ASSETS"}},
		"then CLAIMBRIDGE_K8S_BIN":                    {"", "", dirs["bin"], Found{Dir: dirs["bin"], Kubernetes: "v1.36.4", How: "$CLAIMBRIDGE_K8S_BIN"}},
		"a directory that lacks a binary is an error": {t.TempDir(), "", "", Found{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(AssetsEnv, tc.assets)
			t.Setenv(BinDirEnv, tc.bin)
			got, err := Find(t.Context(), Options{Dir: tc.dir, CacheDir: t.TempDir(), NoDownload: true})
			if tc.want.Dir == "" {
				if err == nil || !strings.Contains(err.Error(), "--k8s-bin=") {
					t.Fatalf("found %+v, %v; want an error naming --k8s-bin", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestReleaseOfAServerVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.36.4": "v1.36.4", "v1.35.2-eks-1a2b3c4": "v1.35.2", "v1.34.1+k3s1": "v1.34.1", "v1.37.0-gke.1200": "v1.37.0", "nonsense": "",
	} {
		got, err := ReleaseOf(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ReleaseOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestTheEmbeddedModulesAreThoseOfE2ETools: the build makes what hack/e2e-bins.sh makes.
func TestTheEmbeddedModulesAreThoseOfE2ETools(t *testing.T) {
	for _, m := range []string{"kube", "etcd", "kubectl"} {
		entries, err := modules.ReadDir(path.Join("modules", m))
		if err != nil {
			t.Fatal(err)
		}
		onDisk, err := os.ReadDir(filepath.Join("..", "..", "e2e", "tools", m))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(onDisk) {
			t.Errorf("%s: %d files embedded, %d in e2e/tools/%s", m, len(entries), len(onDisk), m)
		}
		for _, e := range entries {
			embedded, _ := modules.ReadFile(path.Join("modules", m, e.Name()))
			want, err := os.ReadFile(filepath.Join("..", "..", "e2e", "tools", m, strings.TrimSuffix(e.Name(), ".txt")))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(embedded, want) {
				t.Errorf("modules/%s/%s differs from e2e/tools/%s: copy it again", m, e.Name(), m)
			}
		}
	}
	if p := Pinned(); p.Kubernetes == "" || p.Etcd == "" || p.Kubectl == "v1." {
		t.Errorf("pinned versions %+v", p)
	}
}

// partialDir is where an unfinished download of o's release is kept.
func partialDir(o Options) string {
	dir := o.withDefaults().downloadDir()
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".partial")
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// syncBuffer is a bytes.Buffer the test and what it runs may use at once.
type syncBuffer = syncbuffer.Buffer

// TestABuildMakesTheReleaseOfTheMinorAsked: a patch release of a minor claimbridge embeds
// modules for is built (or found cached) as that minor's pinned release; another minor is an
// error that names what can be built.
func TestABuildMakesTheReleaseOfTheMinorAsked(t *testing.T) {
	pinned := Pinned().Kubernetes
	all := Buildable()
	if len(all) != 2 || all[0] != pinned || minorOf(all[1]) == minorOf(pinned) {
		t.Fatalf("Buildable() = %v, want the pinned %s and one release of another minor", all, pinned)
	}
	older := all[1]
	for in, want := range map[string]string{
		pinned:                      pinned,
		minorOf(pinned) + ".99":     pinned,
		older:                       older,
		minorOf(older) + ".0":       older,
		"v1.30.1":                   "",
		minorOf(pinned) + "-broken": "",
	} {
		if got, _ := buildable(in); got != want {
			t.Errorf("buildable(%q) = %q, want %q", in, got, want)
		}
	}
	_, _, err := Build(t.Context(), Options{Kubernetes: "v1.30.1", CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), pinned) || !strings.Contains(err.Error(), older) {
		t.Errorf("a build of v1.30.1: %v; want an error naming %s and %s", err, pinned, older)
	}

	// A cached build of the older minor serves a later patch release of it.
	cache := t.TempDir()
	o := Options{Kubernetes: older, CacheDir: cache}
	dir := o.withDefaults().buildDir()
	for _, b := range append(slices.Clone(Required), stampFile) {
		write(t, filepath.Join(dir, b), []byte("#!/bin/sh\n"))
		if err := os.Chmod(filepath.Join(dir, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(AssetsEnv, "")
	t.Setenv(BinDirEnv, "")
	got, err := Find(t.Context(), Options{Kubernetes: minorOf(older) + ".9", CacheDir: cache, NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Found{Dir: dir, Kubernetes: older, How: "cache"}, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

// TestTheOlderMinorsModulePinsItsOwnStagingModules: every k8s.io staging module is replaced by
// the release of k8s.io/kubernetes it builds, never the pinned one's.
func TestTheOlderMinorsModulePinsItsOwnStagingModules(t *testing.T) {
	older := Buildable()[1]
	staging := "v0." + strings.TrimPrefix(older, "v1.")
	data, err := modules.ReadFile(path.Join("modules", "kube-"+minorOf(older), "go.mod.txt"))
	if err != nil {
		t.Fatal(err)
	}
	replaces := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[1] == "=>" && strings.HasPrefix(f[0], "k8s.io/") {
			replaces++
			if f[3] != staging {
				t.Errorf("%s is replaced by %s, want %s", f[0], f[3], staging)
			}
		}
	}
	if replaces < 20 {
		t.Errorf("%d staging modules replaced, want all of them", replaces)
	}
}
