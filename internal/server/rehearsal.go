package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/internal/rehearsal/published"
)

// rehearsalHandler serves /rehearsal: the page `claimbridge rehearse --publish` last wrote into
// the ConfigMap name of claimbridge's namespace (the chart's rehearsal Job). It reads the
// ConfigMap on each request: the page is read by people, never on the admission path, and an
// informer would hold a megabyte for it.
func rehearsalHandler(client kubernetes.Interface, namespace, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name == "" {
			http.Error(w, "no rehearsal is served: claimbridge serve runs without --rehearsal-configmap (the chart's rehearsal.enabled sets it)", http.StatusNotFound)
			return
		}
		p, err := published.Read(r.Context(), client, namespace, name)
		switch {
		case errors.Is(err, published.ErrNotPublished):
			http.Error(w, fmt.Sprintf("%v: the rehearsal Job writes it when it ends (kubectl -n %s get jobs)", err, namespace), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, "read the rehearsal: "+err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(p.HTML)))
		if !p.At.IsZero() {
			w.Header().Set("Last-Modified", p.At.UTC().Format(http.TimeFormat))
			w.Header().Set("X-Rehearsed-At", p.At.UTC().Format(time.RFC3339))
		}
		_, _ = w.Write(p.HTML)
	})
}
