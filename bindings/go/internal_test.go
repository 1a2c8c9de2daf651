package session

import (
	"errors"
	"testing"
)

// Every sentinel this binding names is a status of the library, with the library's number.
func TestEveryNamedSentinelIsInTheLibrary(t *testing.T) {
	named := []*Error{
		ErrInvalidArgument, ErrInvalidJSON, ErrInvalidEntry, ErrDuplicateID, ErrMissingParent,
		ErrCycle, ErrUnknownLeaf, ErrCorruptLine, ErrNeedsRepair, ErrTainted, ErrIO, ErrInternal,
		ErrLocked, ErrFileChanged, ErrReadOnly, ErrWrongProcess,
	}
	for _, s := range named {
		if s.Status <= 0 {
			t.Fatalf("sentinel %q is not a status of the library", s.Code)
		}
		if name := statusName(s.Status); name != s.Code {
			t.Fatalf("status %d: library name %q, sentinel %q", s.Status, name, s.Code)
		}
	}
}

// The status table is the library's: codes 1..n in order, each with its library name,
// and the first code after it is "unknown".
func TestStatusTableIsReadFromTheLibrary(t *testing.T) {
	if len(statuses) < 16 {
		t.Fatalf("status table has %d codes, want at least 16", len(statuses))
	}
	for i, s := range statuses {
		if s.Status != int32(i+1) || statusName(s.Status) != s.Code {
			t.Fatalf("table entry %d is %d %q, library says %q", i, s.Status, s.Code, statusName(s.Status))
		}
	}
	if statusName(0) != "ok" || statusName(int32(len(statuses)+1)) != "unknown" {
		t.Fatal("the table stops before the library's last status")
	}
}

// A status code the binding has no variable for (one added to the library after this
// binding was written) still becomes an *Error with the library's name, matched by
// errors.Is against ErrorForCode: checked for every code of the table, so for the new
// ones too.
func TestStatusUnknownToTheBindingMapsToANamedError(t *testing.T) {
	for _, s := range statuses {
		raw := []byte(`{"error":{"code":"` + s.Code + `","message":"m"}}`)
		for _, err := range []*Error{newError(s.Status, raw), newError(s.Status, nil)} {
			if err.Code != s.Code || err.Code == "unknown" || err.Code == "" {
				t.Fatalf("status %d became code %q, want %q", s.Status, err.Code, s.Code)
			}
			if !errors.Is(err, ErrorForCode(s.Code)) {
				t.Fatalf("errors.Is(status %d, ErrorForCode(%q)) is false", s.Status, s.Code)
			}
		}
	}
	// A number past the library's table is "unknown", and no sentinel matches it.
	past := newError(int32(len(statuses)+1), nil)
	if past.Code != "unknown" || ErrorForCode("unknown") != nil {
		t.Fatalf("a status past the table became %q", past.Code)
	}
}

// State names round-trip through text.
func TestStatesRoundTripThroughText(t *testing.T) {
	for _, st := range []State{StateReady, StateNeedsRepair, StateTainted} {
		var back State
		text, _ := st.MarshalText()
		if err := back.UnmarshalText(text); err != nil || back != st {
			t.Fatalf("state %v does not round-trip", st)
		}
	}
}
