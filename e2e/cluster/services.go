package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceNetwork stands in for kube-proxy between kube-apiserver and Services. There is no
// pod network on loopback, so a webhook registered by Service (clientConfig.service, the way
// the chart registers claimbridge) is unreachable: kube-apiserver resolves it to the
// Service's clusterIP:port and dials that. With Options.ServiceNetwork the apiserver gets an
// egress selector for its "cluster" network context — the one it uses for Services, while
// webhooks given by URL keep dialing directly — pointing at an HTTP CONNECT proxy on a unix
// socket in a directory of its own. The proxy connects each clusterIP:port registered with
// RouteService to its backend on loopback, as kube-proxy connects it to a pod; any other
// destination is refused. TLS goes through untouched: the apiserver still verifies the
// certificate for <service>.<namespace>.svc against the caBundle.
type serviceNetwork struct {
	dir, socket, config string
	ln                  net.Listener

	mu     sync.Mutex
	routes map[string]string // clusterIP:port → backend host:port
	open   map[net.Conn]bool // the apiserver side of every connection routed and not closed

	connections, refused atomic.Int64
	wg                   sync.WaitGroup
}

// egressSelectorConfig is kube-apiserver's --egress-selector-config-file: the "cluster"
// network context through the proxy on socket; controlplane and etcd stay direct.
func egressSelectorConfig(socket string) string {
	return `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: ` + strconv.Quote(socket) + `
`
}

// startServiceNetwork listens on dir/services.sock and writes dir/egress-selector.yaml, the
// file kube-apiserver's --egress-selector-config-file names.
func startServiceNetwork(dir string) (*serviceNetwork, error) {
	socket := filepath.Join(dir, "services.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("service network: %w", err)
	}
	cfg := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(cfg, []byte(egressSelectorConfig(socket)), 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("service network: %w", err)
	}
	n := &serviceNetwork{dir: dir, socket: socket, config: cfg, ln: ln, routes: map[string]string{}, open: map[net.Conn]bool{}}
	n.wg.Go(n.serve)
	return n, nil
}

func (n *serviceNetwork) serve() {
	for {
		conn, err := n.ln.Accept()
		if err != nil {
			return // closed
		}
		n.wg.Go(func() { n.handle(conn) })
	}
}

// handle answers one CONNECT (kube-apiserver opens a connection per dial) and then copies
// bytes both ways until either side closes.
func (n *serviceNetwork) handle(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	n.mu.Lock()
	backend, ok := n.routes[req.URL.Host]
	n.mu.Unlock()
	if req.Method != http.MethodConnect || !ok {
		n.refused.Add(1)
		fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.DialTimeout("tcp", backend, 5*time.Second)
	if err != nil {
		n.refused.Add(1)
		fmt.Fprintf(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer func() { _ = up.Close() }()
	n.connections.Add(1)
	n.mu.Lock()
	n.open[conn] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.open, conn)
		n.mu.Unlock()
	}()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); closeWrite(conn); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

func (n *serviceNetwork) close() {
	_ = n.ln.Close()
}

// ServiceNetworkStats counts the connections the service network made.
type ServiceNetworkStats struct {
	// Connections is how many apiserver connections reached a backend.
	Connections int64
	// Refused is how many were refused: no route for the destination, or the backend did not
	// accept the connection.
	Refused int64
}

// ServiceNetworkStats returns the counters of the service network (zero without one).
func (c *Cluster) ServiceNetworkStats() ServiceNetworkStats {
	if c.services == nil {
		return ServiceNetworkStats{}
	}
	return ServiceNetworkStats{Connections: c.services.connections.Load(), Refused: c.services.refused.Load()}
}

// CloseServiceConnections closes every connection the service network carries, the way a
// backend that goes away drops them: kube-apiserver dials again (a new TLS handshake) for its
// next request. Requests in flight on them fail; call it when none are.
func (c *Cluster) CloseServiceConnections() int {
	if c.services == nil {
		return 0
	}
	c.services.mu.Lock()
	defer c.services.mu.Unlock()
	for conn := range c.services.open {
		_ = conn.Close()
	}
	return len(c.services.open)
}

// RouteService sends the apiserver's connections to port of the Service namespace/name (its
// clusterIP) to backend (host:port on loopback), like kube-proxy sending them to the pod
// that serves the Service. It requires Options.ServiceNetwork. Routing again replaces the
// backend; new connections use it.
func (c *Cluster) RouteService(ctx context.Context, namespace, name string, port int32, backend string) error {
	if c.services == nil {
		return errors.New("route service: the cluster was started without Options.ServiceNetwork")
	}
	svc, err := c.Client().CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("route service %s/%s: %w", namespace, name, err)
	}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == "None" {
		return fmt.Errorf("route service %s/%s: no cluster IP", namespace, name)
	}
	found := false
	for _, p := range svc.Spec.Ports {
		found = found || p.Port == port
	}
	if !found {
		return fmt.Errorf("route service %s/%s: no port %d", namespace, name, port)
	}
	c.services.mu.Lock()
	c.services.routes[net.JoinHostPort(ip, strconv.Itoa(int(port)))] = backend
	c.services.mu.Unlock()
	return nil
}
