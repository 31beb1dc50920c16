package v1alpha1

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"
)

//go:embed profiles/*.yaml
var profileFS embed.FS

// defaultOff lists the built-in profiles that the default policy leaves out:
// dra-cpu turns CPU requests into claims, hami replaces the NVIDIA driver's
// nvidia.com/gpu rule, and nvidia-fabric-manager holds GPU claims to Fabric
// Manager's partitions (an alpha driver gate): each must be chosen
// deliberately.
var defaultOff = []string{"dra-cpu", "hami", "nvidia-fabric-manager"}

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	entries, err := profileFS.ReadDir("profiles")
	if err != nil {
		panic(err) // embedded at build time
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// DefaultProfileNames are the profiles of [DefaultPolicy], in order.
func DefaultProfileNames() []string {
	var names []string
	for _, n := range ProfileNames() {
		if !slices.Contains(defaultOff, n) {
			names = append(names, n)
		}
	}
	// nvidia first so that other profiles' rules may override it.
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case a == "nvidia" && b != "nvidia":
			return -1
		case b == "nvidia" && a != "nvidia":
			return 1
		}
		return 0
	})
	return names
}

// ProfileSource returns the YAML text of a built-in profile, as shipped.
func ProfileSource(name string) ([]byte, error) {
	if !slices.Contains(ProfileNames(), name) {
		return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return profileFS.ReadFile(path.Join("profiles", name+".yaml"))
}

func builtinProfile(name string) (*TranslationPolicy, error) {
	data, err := ProfileSource(name)
	if err != nil {
		return nil, err
	}
	var tp TranslationPolicy
	if err := decodeStrict(data, &tp); err != nil {
		return nil, fmt.Errorf("built-in profile %s: %w", name, err)
	}
	return &tp, nil
}

// MatchResourceRule finds the rule in force for an extended resource among
// rules: the last exact rule of that name, else the pattern ("prefix*")
// with the longest prefix (the last of that name); suffix is what "*"
// matched.
func MatchResourceRule(rules []ResourceRule, name string) (rule *ResourceRule, suffix string, ok bool) {
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].Name == name {
			return &rules[i], "", true
		}
	}
	best := -1
	for i := range rules {
		base, pattern := strings.CutSuffix(rules[i].Name, "*")
		if s, found := strings.CutPrefix(name, base); pattern && found && s != "" && (best < 0 || len(rules[i].Name) >= len(rules[best].Name)) {
			best, suffix = i, s
		}
	}
	if best < 0 {
		return nil, "", false
	}
	return &rules[best], suffix, true
}
