package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSchedulerEntryResolved(t *testing.T) {
	no, yes := false, true
	cases := map[string]struct {
		entry SchedulerEntry
		want  SchedulerEntry
	}{
		"a scheduler without a built-in profile is Full": {
			entry: SchedulerEntry{Name: "my-scheduler"},
			want:  SchedulerEntry{Name: "my-scheduler", Output: OutputFull},
		},
		"the built-in profile fills what the entry leaves unset": {
			entry: SchedulerEntry{Name: "kai-scheduler"},
			want: SchedulerEntry{Name: "kai-scheduler", Output: OutputExactlyOnly,
				ClassNameContains: []ClassNameRule{{Resources: kaiGPUResources, Value: "gpu"}}, ConsumableCapacity: &no},
		},
		"what the entry sets stays, an empty list included": {
			entry: SchedulerEntry{Name: "kai-scheduler", Output: OutputSkip, ClassNameContains: []ClassNameRule{}, ConsumableCapacity: &yes},
			want:  SchedulerEntry{Name: "kai-scheduler", Output: OutputSkip, ClassNameContains: []ClassNameRule{}, ConsumableCapacity: &yes},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.entry.Resolved()); diff != "" {
				t.Errorf("Resolved (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestBuiltinSchedulerSaysWhy(t *testing.T) {
	for _, name := range []string{DefaultScheduler, "volcano", "kai-scheduler", "yunikorn"} {
		if _, why, ok := BuiltinScheduler(name); !ok || why == "" {
			t.Errorf("%s: built-in profile %v, why %q", name, ok, why)
		}
	}
	if _, _, ok := BuiltinScheduler("my-scheduler"); ok {
		t.Error("my-scheduler has a built-in profile")
	}
}

func TestOutputProfileStricter(t *testing.T) {
	cases := map[string]struct {
		a, b, want OutputProfile
	}{
		"ExactlyOnly is stricter than Full":           {a: OutputFull, b: OutputExactlyOnly, want: OutputExactlyOnly},
		"Skip is stricter than ExactlyOnly":           {a: OutputSkip, b: OutputExactlyOnly, want: OutputSkip},
		"an empty profile allows as much as Full":     {a: "", b: OutputFull, want: ""},
		"the stricter one wins whichever comes first": {a: OutputExactlyOnly, b: "", want: OutputExactlyOnly},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.a.Stricter(tc.b); got != tc.want {
				t.Errorf("%q.Stricter(%q) = %q, want %q", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
