// Package published keeps the rehearsal's page in a ConfigMap: `claimbridge rehearse
// --publish` writes it there from a Job in the cluster, and `claimbridge serve` serves it at
// /rehearsal beside /report. The page is stored gzipped (a ConfigMap holds at most 1 MiB),
// with annotations that say when it ran and what it found, so that
// `kubectl get configmap -o yaml` answers without the page.
package published

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Keys of the ConfigMap.
const (
	// PageKey holds the HTML page, gzipped, in binaryData.
	PageKey = "rehearsal.html.gz"
	// RehearsedAt is the annotation with the time the rehearsal ended (RFC 3339).
	RehearsedAt = "claimbridge.io/rehearsed-at"
	// Summary is the annotation with what it found, in one line.
	Summary = "claimbridge.io/rehearsal"
)

// MaxPage is the largest gzipped page a ConfigMap takes with room for its metadata.
const MaxPage = 1000 * 1000

// ErrNotPublished means the ConfigMap holds no page: the rehearsal has not run yet.
var ErrNotPublished = errors.New("no rehearsal has been published yet")

// Page is a published rehearsal.
type Page struct {
	HTML    []byte
	At      time.Time
	Summary string
}

// Publish writes the page into the ConfigMap namespace/name: it updates the ConfigMap when
// it exists (the chart creates it, so that the Job's Role needs no create), else creates it.
func Publish(ctx context.Context, c kubernetes.Interface, namespace, name string, p Page) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(p.HTML); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if buf.Len() > MaxPage {
		return fmt.Errorf("the page is %d bytes gzipped, more than a ConfigMap holds (%d): rehearse fewer namespaces (-n)", buf.Len(), MaxPage)
	}
	api := c.CoreV1().ConfigMaps(namespace)
	cm, err := api.Get(ctx, name, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	switch {
	case create:
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	case err != nil:
		return fmt.Errorf("publish the rehearsal: %w", err)
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[RehearsedAt] = p.At.UTC().Format(time.RFC3339)
	cm.Annotations[Summary] = p.Summary
	cm.BinaryData = map[string][]byte{PageKey: buf.Bytes()}
	if create {
		_, err = api.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		_, err = api.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("publish the rehearsal into configmap %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Read returns the page published in the ConfigMap namespace/name; ErrNotPublished when
// the ConfigMap holds none.
func Read(ctx context.Context, c kubernetes.Interface, namespace, name string) (Page, error) {
	cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Page{}, fmt.Errorf("configmap %s/%s: %w", namespace, name, ErrNotPublished)
	}
	if err != nil {
		return Page{}, err
	}
	gz, ok := cm.BinaryData[PageKey]
	if !ok {
		return Page{}, fmt.Errorf("configmap %s/%s: %w", namespace, name, ErrNotPublished)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return Page{}, fmt.Errorf("configmap %s/%s, %s: %w", namespace, name, PageKey, err)
	}
	html, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return Page{}, fmt.Errorf("configmap %s/%s, %s: %w", namespace, name, PageKey, err)
	}
	p := Page{HTML: html, Summary: cm.Annotations[Summary]}
	if at, err := time.Parse(time.RFC3339, cm.Annotations[RehearsedAt]); err == nil {
		p.At = at
	}
	return p, nil
}
