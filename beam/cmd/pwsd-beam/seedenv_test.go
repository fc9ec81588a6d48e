package main

import (
	"strings"
	"testing"
)

// TestRemovedSeedEnv: PWSD_BEAM_SEED, which the pipeline no longer reads,
// stops pwsd-beam when it is set at all (even empty) with an error naming
// --seed-uri and never the value; unset, nothing is refused.
func TestRemovedSeedEnv(t *testing.T) {
	const secret = "00112233445566778899aabbccddeeff"
	for _, tc := range []struct {
		name string
		env  map[string]string
		fail bool
	}{
		{"unset", map[string]string{"PWSD_BEAM_TOKEN": "x"}, false},
		{"set", map[string]string{"PWSD_BEAM_SEED": secret}, true},
		{"set empty", map[string]string{"PWSD_BEAM_SEED": ""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseRemovedSeedEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if !tc.fail {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("PWSD_BEAM_SEED set, and nothing refused it")
			}
			if msg := err.Error(); !strings.Contains(msg, "--seed-uri") || !strings.Contains(msg, "PWSD_BEAM_SEED") || strings.Contains(msg, secret) {
				t.Fatalf("error %q should name PWSD_BEAM_SEED and --seed-uri and not echo the seed", msg)
			}
		})
	}
}
