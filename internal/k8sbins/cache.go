package k8sbins

import (
	"fmt"
	"os"
	"path/filepath"
)

// intoCache fills the cache directory dir once: under the lock parent/.<name>.lock (the one
// hack/lib.sh takes, so a script and claimbridge never fill it at once), when dir has no
// stamp yet, fill writes everything, stamp last, into a directory next to dir, which is then
// renamed into place. With keep, that directory is parent/.<name>.partial and stays when fill
// fails, so that a download resumes where it stopped; else it is a new temporary directory,
// removed.
func intoCache(dir string, keep bool, fill func(tmp string) error) (string, error) {
	parent, name := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(parent, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	defer func() { _ = lock.Close() }()
	if err := lockFile(lock); err != nil {
		return "", fmt.Errorf("cache lock: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, stampFile)); err == nil {
		return dir, nil // filled by the run we waited for
	}
	// A directory without its stamp cannot come from a rename below: clear it.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	var tmp string
	if keep {
		tmp = filepath.Join(parent, "."+name+".partial")
		err = os.MkdirAll(tmp, 0o755)
	} else {
		tmp, err = os.MkdirTemp(parent, "."+name+".tmp.")
	}
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	if err := fill(tmp); err != nil {
		if !keep {
			_ = os.RemoveAll(tmp)
		}
		return "", err
	}
	if _, err := os.Stat(filepath.Join(tmp, stampFile)); err != nil {
		return "", fmt.Errorf("cache: %s not stamped: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	return dir, nil
}
