package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 15 seconds), calls down while
// it is stopped (nil: nothing), starts it again with the same flags, port and log file, and
// waits until it answers /readyz. The other components and etcd keep running. ctx bounds
// down and the wait.
func (c *Cluster) RestartAPIServer(ctx context.Context, down func(context.Context) error) error {
	var old *Process
	for _, p := range c.Processes() {
		if p.Name == KubeAPIServer {
			old = p // the last one started
		}
	}
	if old == nil {
		return errors.New("restart kube-apiserver: not running")
	}
	old.Stop()
	var downErr error
	if down != nil {
		downErr = down(ctx)
	}
	p, err := c.StartProcess(KubeAPIServer, old.Path, old.Args, nil)
	if err != nil {
		return errors.Join(downErr, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.Exited():
			return false, errors.New("kube-apiserver exited")
		default:
		}
		_, err := c.Client().Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		return errors.Join(downErr, fmt.Errorf("restart kube-apiserver: %w", err))
	}
	return downErr
}
