// Command etcd is the etcd server at the version pinned in go.mod, built for the e2e harness.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
