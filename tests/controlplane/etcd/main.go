// Command etcd is the etcd server of the test control plane.
//
// The etcd project publishes its server as the Go module go.etcd.io/etcd/server/v3; its
// command (the repository's root module) is not served by the module proxy, so this entry
// point hands the arguments to the server's own command-line front end.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
