package published

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAPublishedPageIsReadBackAsWritten(t *testing.T) {
	at := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	for name, existing := range map[string][]*corev1.ConfigMap{
		"into the ConfigMap the chart made": {{ObjectMeta: metav1.ObjectMeta{Name: "cb-rehearsal", Namespace: "cb", Labels: map[string]string{"app": "cb"}}}},
		"into a new ConfigMap":              nil,
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset()
			for _, cm := range existing {
				if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Read(t.Context(), c, "cb", "cb-rehearsal"); !errors.Is(err, ErrNotPublished) {
				t.Fatalf("before publishing: %v, want ErrNotPublished", err)
			}
			html := []byte("<!doctype html><html>" + strings.Repeat("<tr><td>research/Deployment/trainer</td></tr>", 2000) + "</html>")
			for _, page := range [][]byte{[]byte("<html>first</html>"), html} {
				want := Page{HTML: page, At: at, Summary: "8 workloads rehearsed on Kubernetes v1.37.2 (cache), 0 bound otherwise than forecast"}
				if err := Publish(t.Context(), c, "cb", "cb-rehearsal", want); err != nil {
					t.Fatal(err)
				}
				got, err := Read(t.Context(), c, "cb", "cb-rehearsal")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
			}
			cm, err := c.CoreV1().ConfigMaps("cb").Get(t.Context(), "cb-rehearsal", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cm.BinaryData[PageKey]) >= len(html)/10 {
				t.Errorf("the page is stored in %d bytes for %d: not compressed", len(cm.BinaryData[PageKey]), len(html))
			}
			if existing != nil && cm.Labels["app"] != "cb" {
				t.Errorf("publishing dropped the chart's labels: %v", cm.Labels)
			}
		})
	}
}

func TestAPageTooLargeForAConfigMapIsAnErrorAndWritesNothing(t *testing.T) {
	c := fake.NewClientset()
	noise := make([]byte, 2*MaxPage)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.UintN(256))
	}
	err := Publish(context.Background(), c, "cb", "cb-rehearsal", Page{HTML: noise, At: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "more than a ConfigMap holds") {
		t.Fatalf("publish %d random bytes: %v, want an error saying it does not fit", len(noise), err)
	}
	if _, err := Read(context.Background(), c, "cb", "cb-rehearsal"); !errors.Is(err, ErrNotPublished) {
		t.Errorf("after the failed publish: %v, want nothing published", err)
	}
}

func TestACorruptPageIsAnErrorThatNamesIt(t *testing.T) {
	c := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cb-rehearsal", Namespace: "cb"}, BinaryData: map[string][]byte{PageKey: bytes.Repeat([]byte("x"), 10)}})
	if _, err := Read(context.Background(), c, "cb", "cb-rehearsal"); err == nil || errors.Is(err, ErrNotPublished) || !strings.Contains(err.Error(), PageKey) {
		t.Errorf("a page that is not gzip: %v, want an error naming %s", err, PageKey)
	}
}
