package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 15 seconds), calls down while
// it is stopped (nil: nothing), starts it again with the same flags, port and log file, and
// waits until it answers /readyz. The other components and etcd keep running. ctx bounds
// down and the wait.
func (c *Cluster) RestartAPIServer(ctx context.Context, down func(context.Context) error) error {
	old := c.component(KubeAPIServer)
	if old == nil {
		return errors.New("restart kube-apiserver: not running")
	}
	old.stop(15 * time.Second)
	var downErr error
	if down != nil {
		downErr = down(ctx)
	}
	comp, err := startComponent(KubeAPIServer, old.cmd.Path, old.logPath, old.cmd.Args[1:], nil)
	if err != nil {
		return errors.Join(downErr, err)
	}
	c.mu.Lock()
	for i, cur := range c.components {
		if cur == old {
			c.components[i] = comp
		}
	}
	c.mu.Unlock()
	if err := c.waitReady(ctx, KubeAPIServer, c.apiserverReady); err != nil {
		return errors.Join(downErr, fmt.Errorf("restart kube-apiserver: %w", err))
	}
	return downErr
}
