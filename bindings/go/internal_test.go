package session

import "testing"

// The sentinels carry the library's own status names, and every status has one.
func TestSentinelsMatchTheLibrary(t *testing.T) {
	for i, s := range sentinels {
		if s.Status != int32(i+1) {
			t.Fatalf("sentinel %s has status %d, want %d", s.Code, s.Status, i+1)
		}
		if name := statusName(s.Status); name != s.Code {
			t.Fatalf("status %d: library name %q, sentinel %q", s.Status, name, s.Code)
		}
	}
	if statusName(0) != "ok" || statusName(int32(len(sentinels)+1)) != "unknown" {
		t.Fatal("a status was added to the library without a sentinel here")
	}
	for _, st := range []State{StateReady, StateNeedsRepair, StateTainted} {
		var back State
		text, _ := st.MarshalText()
		if err := back.UnmarshalText(text); err != nil || back != st {
			t.Fatalf("state %v does not round-trip", st)
		}
	}
}
