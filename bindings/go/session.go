package session

/*
#include <stdlib.h>
#include <string.h>
#include <session.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Version returns the version of the libsession library in use, e.g. "0.1.0".
func Version() string { return C.GoString(C.session_version()) }

// statusName is session_status_name: "ok", "missing_parent", …, or "unknown".
func statusName(status int32) string {
	return C.GoString(C.session_status_name(C.SessionStatus(status)))
}

// State is the condition of a Store.
type State int32

const (
	StateReady       State = C.SESSION_STATE_READY        // appends are accepted
	StateNeedsRepair State = C.SESSION_STATE_NEEDS_REPAIR // unterminated tail: read-only
	StateTainted     State = C.SESSION_STATE_TAINTED      // a write failed; also a closed Store
)

var stateNames = map[State]string{
	StateReady: "ready", StateNeedsRepair: "needs_repair", StateTainted: "tainted",
}

// String returns "ready", "needs_repair" or "tainted" (the names the JSON uses).
func (s State) String() string {
	if name, ok := stateNames[s]; ok {
		return name
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	for state, name := range stateNames {
		if name == string(b) {
			*s = state
			return nil
		}
	}
	return fmt.Errorf("session: unknown state %q", b)
}

// OpenReport is what opening a file found: its state and warnings, and for a salvage
// open whether every line was loaded and what was wrong with the others.
type OpenReport struct {
	State       State        `json:"state"`
	Warnings    []Warning    `json:"warnings"`
	Complete    bool         `json:"complete"`              // false only when salvage skipped or detached lines
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"` // salvage only
}

// Receipt is the result of a successful append.
type Receipt struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"` // 0-based position among the store's committed entries
}

// Snapshot is a store's state, entries (in commit order) and warnings, read in one turn
// (and a salvage store's diagnostics).
type Snapshot struct {
	State       State             `json:"state"`
	Entries     []json.RawMessage `json:"entries"`
	Warnings    []Warning         `json:"warnings"`
	Complete    bool              `json:"complete"`
	Diagnostics []Diagnostic      `json:"diagnostics,omitempty"`
}

// Durability is what a successful append promises.
type Durability string

const (
	DurabilityNone       Durability = "none"        // the OS accepted the bytes (the default)
	DurabilityFsync      Durability = "fsync"       // the line is on stable storage (fdatasync per append)
	DurabilityFsyncBatch Durability = "fsync_batch" // as fsync, with group commit across concurrent appends
)

// Options for OpenWith. The zero value is the default of Open: an advisory lock against a
// second writer, an identity check before each append, no fsync.
type Options struct {
	Durability Durability // "" is DurabilityNone
	// NoLock does not take the exclusive advisory lock (flock) that makes a second
	// writer fail with ErrLocked.
	NoLock bool
	// ReadOnly never creates, locks or writes the file; appends fail with ErrReadOnly.
	// It works beside a writer.
	ReadOnly bool
	// Salvage is read-only and loads every good line of a damaged file, skipping the
	// bad ones; OpenReport.Complete and Diagnostics say what was skipped.
	Salvage bool
	// NoCheckIdentity skips the check, before each append, that the path still names
	// the file being written and that its size is what this writer left
	// (ErrFileChanged).
	NoCheckIdentity bool
	// StrictRoles rejects extension roles and blocks (ErrInvalidEntry); a file that
	// already holds one fails to open with ErrCorruptLine at that line.
	StrictRoles bool
}

// toJSON is the options object for session_jsonl_store_open_with: only what differs from
// the defaults.
func (o Options) toJSON() []byte {
	no := false
	v := struct {
		Durability    Durability `json:"durability,omitempty"`
		Lock          *bool      `json:"lock,omitempty"`
		ReadOnly      bool       `json:"readOnly,omitempty"`
		Salvage       bool       `json:"salvage,omitempty"`
		CheckIdentity *bool      `json:"checkIdentity,omitempty"`
		StrictRoles   bool       `json:"strictRoles,omitempty"`
	}{Durability: o.Durability, ReadOnly: o.ReadOnly, Salvage: o.Salvage, StrictRoles: o.StrictRoles}
	if o.NoLock {
		v.Lock = &no
	}
	if o.NoCheckIdentity {
		v.CheckIdentity = &no
	}
	b, _ := json.Marshal(v)
	return b
}

// RepairReport is what Repair did.
type RepairReport struct {
	TruncatedBytes uint64 `json:"truncatedBytes"` // bytes cut from the end (0: nothing to repair)
	Backup         string `json:"backup"`         // the sidecar holding exactly those bytes; "" when none
	Entries        uint64 `json:"entries"`        // committed entries in the repaired file
}

// Recovery is what JSONL bytes commit: the entries and the warnings.
type Recovery struct {
	Entries  []json.RawMessage `json:"entries"`
	Warnings []Warning         `json:"warnings"`
}

// ---------------------------------------------------------------- C plumbing ----

// cString copies s into a NUL-terminated C string that the caller frees with C.free.
// A NUL byte inside s cannot be carried: that is ErrInvalidArgument.
func cString(s []byte, argument string) (*C.char, error) {
	if bytes.IndexByte(s, 0) >= 0 {
		return nil, argumentError(argument, argument+" contains a NUL byte, which a C string cannot carry")
	}
	p := (*C.char)(C.malloc(C.size_t(len(s) + 1)))
	if p == nil {
		panic("session: out of memory")
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(p)), len(s)+1)
	copy(buf, s)
	buf[len(s)] = 0
	return p, nil
}

func cStringFrom(s, argument string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, argumentError(argument, argument+" contains a NUL byte, which a C string cannot carry")
	}
	return C.CString(s), nil
}

// goBytes copies a NUL-terminated C string into Go memory (nil for NULL).
func goBytes(p *C.char) []byte {
	if p == nil {
		return nil
	}
	n := int(C.strlen(p))
	out := make([]byte, n)
	copy(out, unsafe.Slice((*byte)(unsafe.Pointer(p)), n))
	return out
}

// call runs one libsession call that returns its result through out_json, frees that
// string on every path, and turns a failure into an *Error.
func call(f func(out **C.char) C.SessionStatus) ([]byte, error) {
	var out *C.char
	status := f(&out)
	defer C.session_string_free(out)
	text := goBytes(out)
	if status != C.SESSION_OK {
		return nil, newError(int32(status), text)
	}
	return text, nil
}

func decode(text []byte, v interface{}) error {
	if err := json.Unmarshal(text, v); err != nil {
		return fmt.Errorf("session: unexpected result %q: %w", text, err)
	}
	return nil
}

func decodeArray(text []byte) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := decode(text, &items); err != nil {
		return nil, err
	}
	return items, nil
}

// ----------------------------------------------------------- pure functions ----

// ParseEntry validates one entry and returns it normalised: the same JSON value with
// insignificant whitespace removed; key order, unknown fields, escapes and numbers kept.
func ParseEntry(entry []byte) (json.RawMessage, error) {
	c, err := cString(entry, "entry_json")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(c))
	text, err := call(func(out **C.char) C.SessionStatus { return C.session_parse_entry(c, out) })
	if err != nil {
		return nil, err
	}
	return json.RawMessage(text), nil
}

// PathTo returns the entries from the root to leaf over entries, a JSON array of
// entries in any order. Only the chosen path is checked for missing parents and cycles.
func PathTo(entries []byte, leaf string) ([]json.RawMessage, error) {
	return overArray(entries, leaf, func(e, l *C.char, out **C.char) C.SessionStatus {
		return C.session_path_to(e, l, out)
	})
}

// MessagesOnPath returns the messages on the path to leaf, complete; metadata entries
// are on the path but are not messages.
func MessagesOnPath(entries []byte, leaf string) ([]json.RawMessage, error) {
	return overArray(entries, leaf, func(e, l *C.char, out **C.char) C.SessionStatus {
		return C.session_messages_on_path(e, l, out)
	})
}

func overArray(entries []byte, leaf string,
	f func(e, l *C.char, out **C.char) C.SessionStatus) ([]json.RawMessage, error) {
	text, err := callEntriesLeaf(entries, leaf, f)
	if err != nil {
		return nil, err
	}
	return decodeArray(text)
}

// callEntriesLeaf calls f with entries ("entries_json") and leaf ("leaf_id") as C
// strings, freed after the call, and returns the text f wrote. A NUL byte in either
// fails with ErrInvalidArgument before f is called, entries checked first.
func callEntriesLeaf(entries []byte, leaf string,
	f func(e, l *C.char, out **C.char) C.SessionStatus) ([]byte, error) {
	ce, err := cString(entries, "entries_json")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(ce))
	cl, err := cStringFrom(leaf, "leaf_id")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cl))
	return call(func(out **C.char) C.SessionStatus { return f(ce, cl, out) })
}

// RecoverJSONL returns what the JSONL bytes commit. A line is committed only when it
// ends with '\n'; a final piece without one is reported as an "unterminated_tail"
// warning. A committed line that is not a valid entry fails with ErrCorruptLine. Pure:
// it never touches a file. data may hold any bytes, NUL included.
func RecoverJSONL(data []byte) (Recovery, error) {
	var ptr *C.uint8_t
	if len(data) > 0 {
		// Borrowed for the call only, and holding no Go pointers: allowed by cgo's rules.
		ptr = (*C.uint8_t)(unsafe.Pointer(&data[0]))
	}
	text, err := call(func(out **C.char) C.SessionStatus {
		return C.session_recover_jsonl(ptr, C.size_t(len(data)), out)
	})
	runtime.KeepAlive(data)
	if err != nil {
		return Recovery{}, err
	}
	var r Recovery
	return r, decode(text, &r)
}

// -------------------------------------------------------------------- Store ----

// Store is an open session store, in memory or backed by a JSONL file. It is safe for
// concurrent use by many goroutines. Close it when done.
type Store struct {
	mu  sync.RWMutex    // readers: every call; writer: Close
	ptr *C.SessionStore // nil once closed
}

func newStore(p *C.SessionStore) *Store {
	s := &Store{ptr: p}
	runtime.SetFinalizer(s, func(s *Store) {
		// Unreachable, so no call can be in flight: close without the lock.
		if s.ptr != nil {
			C.session_store_close(s.ptr)
			s.ptr = nil
		}
	})
	return s
}

// OpenMemory opens a new, empty store in memory.
func OpenMemory() (*Store, error) {
	var p *C.SessionStore
	if status := C.session_memory_store_open(&p); status != C.SESSION_OK {
		return nil, newError(int32(status), nil)
	}
	return newStore(p), nil
}

// Open opens the JSONL file at path for appending, creating it if it is missing (not
// its folders), with the default Options. Opening recovers the committed lines and
// replays the tree rules in file order; it fails with ErrCorruptLine, ErrDuplicateID or
// ErrMissingParent (with Line), ErrLocked (another writer has the file open) or ErrIO.
// A file whose last line is unterminated opens with report.State StateNeedsRepair:
// reads work, appends fail with ErrNeedsRepair, and the file is not modified (see
// Repair).
func Open(path string) (*Store, OpenReport, error) {
	return open(path, nil)
}

// OpenWith is Open with Options: durability, locking, read-only and salvage opens.
// Invalid options fail with ErrInvalidArgument (Argument "options_json").
func OpenWith(path string, options Options) (*Store, OpenReport, error) {
	return open(path, options.toJSON())
}

func open(path string, options []byte) (*Store, OpenReport, error) {
	cp, err := cStringFrom(path, "path")
	if err != nil {
		return nil, OpenReport{}, err
	}
	defer C.free(unsafe.Pointer(cp))
	var co *C.char
	if options != nil {
		if co, err = cString(options, "options_json"); err != nil {
			return nil, OpenReport{}, err
		}
		defer C.free(unsafe.Pointer(co))
	}
	var p *C.SessionStore
	text, err := call(func(out **C.char) C.SessionStatus {
		if options == nil {
			return C.session_jsonl_store_open(cp, &p, out)
		}
		return C.session_jsonl_store_open_with(cp, co, &p, out)
	})
	if err != nil {
		C.session_store_close(p) // NULL on failure; harmless either way
		return nil, OpenReport{}, err
	}
	s := newStore(p)
	report := OpenReport{Complete: true}
	if err := decode(text, &report); err != nil {
		s.Close()
		return nil, OpenReport{}, err
	}
	return s, report, nil
}

// PgOptions are the options of OpenPostgres; the zero value is the defaults.
type PgOptions struct {
	// Durability sets the connection's synchronous_commit: DurabilityNone → off,
	// DurabilityFsync and DurabilityFsyncBatch → on. Empty: the server's setting.
	Durability Durability
	// StrictRoles rejects extension roles and blocks.
	StrictRoles bool
}

// OpenPostgres opens session sessionID of the PostgreSQL database that conninfo names
// (a libpq-style connection string or a postgresql:// URI), creating the schema on
// first use and the session if it is new. The Store has the JSONL store's meaning;
// any number of stores in any number of processes may append to one session, and Seq
// is that session's commit order. A lost connection is ErrIO and taints the store
// (close it, open again); after a failed commit, appending the identical entry again
// through a new store returns the committed entry's receipt. No error holds the
// password of conninfo.
func OpenPostgres(conninfo, sessionID string, options PgOptions) (*Store, error) {
	cc, err := cStringFrom(conninfo, "conninfo")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cc))
	cs, err := cStringFrom(sessionID, "session_id")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cs))
	object := map[string]interface{}{}
	if options.Durability != "" {
		object["durability"] = options.Durability
	}
	if options.StrictRoles {
		object["strictRoles"] = true
	}
	encoded, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	co, err := cString(encoded, "options_json")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(co))
	var p *C.SessionStore
	if _, err := call(func(out **C.char) C.SessionStatus {
		return C.session_pg_store_open(cc, cs, co, &p, out)
	}); err != nil {
		C.session_store_close(p) // NULL on failure; harmless either way
		return nil, err
	}
	return newStore(p), nil
}

// Repair repairs the JSONL file at path when its only problem is an unterminated tail
// (what makes it open as StateNeedsRepair): the uncommitted bytes are moved to a
// backup file next to it (RepairReport.Backup) and the file is cut to its committed
// prefix, in an order that loses no committed line if interrupted. A file without
// such a tail is left as it is. It fails, leaving the file untouched, with
// ErrCorruptLine, ErrDuplicateID or ErrMissingParent; with ErrLocked while a writer
// has the file open; with ErrIO. Do not repair a file that a writer without the lock
// has open.
func Repair(path string) (RepairReport, error) {
	cp, err := cStringFrom(path, "path")
	if err != nil {
		return RepairReport{}, err
	}
	defer C.free(unsafe.Pointer(cp))
	text, err := call(func(out **C.char) C.SessionStatus { return C.session_jsonl_repair(cp, out) })
	if err != nil {
		return RepairReport{}, err
	}
	var r RepairReport // "backup": null leaves Backup ""
	if err := decode(text, &r); err != nil {
		return RepairReport{}, err
	}
	return r, nil
}

// do runs one call on the open store, holding the read lock so that Close waits for it.
func (s *Store) do(f func(p *C.SessionStore, out **C.char) C.SessionStatus) ([]byte, error) {
	if s == nil {
		return nil, ErrClosed
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr == nil {
		return nil, ErrClosed
	}
	return call(func(out **C.char) C.SessionStatus { return f(s.ptr, out) })
}

// Append appends one entry (JSON text, e.g. a json.RawMessage). The entry is validated
// and fixed at the moment of the call; later changes to the slice cannot alter it.
// Appends commit in the order they arrive. Errors: ErrInvalidJSON, ErrInvalidEntry (the
// store is unchanged), ErrDuplicateID, ErrMissingParent, ErrNeedsRepair, ErrIO (the
// write failed and may have left half a line: the store is tainted from then on),
// ErrTainted, ErrInvalidArgument, ErrClosed.
func (s *Store) Append(entry []byte) (Receipt, error) {
	c, err := cString(entry, "entry_json")
	if err != nil {
		return Receipt{}, err
	}
	defer C.free(unsafe.Pointer(c))
	text, err := s.do(func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_append(p, c, out)
	})
	if err != nil {
		return Receipt{}, err
	}
	var r Receipt
	return r, decode(text, &r)
}

// Entries returns every committed entry in commit order (on a StateNeedsRepair store,
// the committed prefix). It waits for the appends that arrived before it.
func (s *Store) Entries() ([]json.RawMessage, error) {
	text, err := s.do(func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_entries(p, out)
	})
	if err != nil {
		return nil, err
	}
	return decodeArray(text)
}

// Read returns the state, the entries and the warnings in one turn.
func (s *Store) Read() (Snapshot, error) {
	text, err := s.do(func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_read(p, out)
	})
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Complete: true}
	return snap, decode(text, &snap)
}

// PathTo returns the entries from the root to leaf, through the store's index (the
// cost grows with the path's length). ErrUnknownLeaf when no entry has that id.
func (s *Store) PathTo(leaf string) ([]json.RawMessage, error) {
	return s.leafCall(leaf, func(p *C.SessionStore, l *C.char, out **C.char) C.SessionStatus {
		return C.session_store_path_to(p, l, out)
	})
}

// MessagesOnPath returns the messages on the path to leaf, complete; metadata is skipped.
func (s *Store) MessagesOnPath(leaf string) ([]json.RawMessage, error) {
	return s.leafCall(leaf, func(p *C.SessionStore, l *C.char, out **C.char) C.SessionStatus {
		return C.session_store_messages_on_path(p, l, out)
	})
}

func (s *Store) leafCall(leaf string,
	f func(p *C.SessionStore, l *C.char, out **C.char) C.SessionStatus) ([]json.RawMessage, error) {
	cl, err := cStringFrom(leaf, "leaf_id")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cl))
	text, err := s.do(func(p *C.SessionStore, out **C.char) C.SessionStatus { return f(p, cl, out) })
	if err != nil {
		return nil, err
	}
	return decodeArray(text)
}

// State returns the store's state at once (it does not wait for queued appends). A
// closed Store reports StateTainted, as the C library does for a NULL store.
func (s *Store) State() State {
	if s == nil {
		return StateTainted
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr == nil {
		return StateTainted
	}
	return State(C.session_store_state(s.ptr))
}

// Close waits for the calls in flight, then closes the store and frees it. Later calls
// return ErrClosed. Appends that returned are already written; Close does not sync.
// Close is idempotent and always returns nil.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.session_store_close(s.ptr)
		s.ptr = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}
