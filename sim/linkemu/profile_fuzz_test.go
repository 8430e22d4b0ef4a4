package linkemu

import (
	"testing"
)

// FuzzParseProfiles feeds arbitrary YAML to the profiles loader (linkemu --profiles FILE):
// an error or profiles that are valid, uniquely named and physically meaningful (rates and
// delays >= 0, a long-run loss ratio in [0, 1]), never a panic.
func FuzzParseProfiles(f *testing.F) {
	f.Add(profilesYAML)
	f.Add([]byte("profiles:\n  - name: x\n    bandwidth_kbit: .nan\n"))
	f.Add([]byte("profiles:\n  - name: x\n    delay_ms: {mean: 1e300, sd: .inf}\n"))
	f.Add([]byte("profiles:\n  - name: x\n    ge: {p: 1, r: 1, loss_good: 1, loss_bad: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseProfiles(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if err := p.Validate(); err != nil {
				t.Fatalf("accepted profile fails Validate: %v", err)
			}
			if seen[p.Name] {
				t.Fatalf("duplicate profile %q accepted", p.Name)
			}
			seen[p.Name] = true
			for _, im := range []Impairment{p.ToDevice, p.ToGateway} {
				if im.Rate < 0 || im.MeanDelay() < 0 || im.Delay.SD < 0 || im.Extra.SD < 0 {
					t.Fatalf("profile %q: negative rate or delay: %+v", p.Name, im)
				}
				if l := im.ExpectedLoss(); !(l >= 0 && l <= 1) {
					t.Fatalf("profile %q: expected loss %v", p.Name, l)
				}
			}
		}
	})
}
