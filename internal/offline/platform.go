package offline

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/platform"
)

// PresetError is a preset name that is not one of v1alpha1.PlatformPresets.
type PresetError struct{ Err error }

func (e PresetError) Error() string { return e.Err.Error() }

// Platform is the platform a run assumes: base (detected from a live
// cluster; nil for the drivers' own defaults), then the presets named (`--platform-preset`), then the Platform
// document in file (`--platform`, "" for none). A file that cannot be read
// or decoded is an error that names it and, for a field, its path; an
// unknown preset is a PresetError.
func Platform(base *platform.Platform, file string, presets []string) (*platform.Platform, error) {
	var doc *v1alpha1.Platform
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if doc, err = v1alpha1.DecodePlatform(data); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	p, err := platform.Load(base, presets, doc, filepath.Base(file))
	if err != nil {
		return nil, PresetError{err}
	}
	return p, nil
}
