//go:build !unix

package k8sbins

import "os"

// lockFile takes no lock outside Unix: two runs filling the cache at once each fill a
// directory of their own and the last rename wins.
func lockFile(*os.File) error { return nil }
