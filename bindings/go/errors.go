package session

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error is a failure reported by libsession (or, for a NUL byte in an argument, by this
// binding on its behalf). Only the details that the code defines are set; the others
// keep their zero value (Offset: -1).
type Error struct {
	Status  int32  // the C status value, e.g. 5 (SESSION_ERR_MISSING_PARENT)
	Code    string // its stable name, e.g. "missing_parent"
	Message string // human-readable

	Pointer  string // invalid_json, invalid_entry, corrupt_line: JSON Pointer to the bad spot
	Offset   int64  // invalid_json: byte offset in the text; -1 when absent
	ID       string // duplicate_id, cycle, unknown_leaf
	ChildID  string // missing_parent
	ParentID string // missing_parent
	Line     int64  // corrupt_line and open-time replay errors: 1-based line; 0 when absent
	// Reason is, for corrupt_line, "invalid_json", "invalid_entry" or "line_too_long";
	// for file_changed, "deleted", "replaced" or "size_changed".
	Reason       string
	Argument     string    // invalid_argument: the argument's name ("options_json" for bad Options)
	Op           string    // io, file_changed: "open", "read", "write", "sync", "lock", "identity", "truncate"
	OSError      int       // io: the errno, when the OS gave one; 0 when absent
	Path         string    // locked: the file another writer holds
	ExpectedSize int64     // file_changed, reason size_changed: the size this writer left
	ActualSize   int64     // file_changed, reason size_changed: the size found
	OwnerPID     int       // wrong_process: the process that opened the store
	PID          int       // wrong_process: the calling process
	Warnings     []Warning // needs_repair
	// Cause is, for tainted, the original error object (the one the failing call
	// returned under "error"), byte for byte the same in every result that reports it.
	Cause json.RawMessage
	// Raw is the whole error JSON, {"error":{"code":…,"message":…,…}}.
	Raw json.RawMessage

	CompactionID     string // invalid_compaction: the compaction
	FirstKeptEntryID string // invalid_compaction: its firstKeptEntryId ("" when null)
	// EntryID is, for tool_pairing, the defective entry; for invalid_argument from a
	// failing estimator, the message it was counting.
	EntryID            string
	ToolCallID         string // tool_pairing
	InteractionStartID string // tool_pairing: the first entry of the defective interaction
	// EstimatorErr is the error a TokenEstimator returned, which made the library fail
	// the call (ErrInvalidArgument); Unwrap returns it.
	EstimatorErr error
}

// Unwrap returns EstimatorErr, so that errors.Is and errors.As reach a TokenEstimator's
// error through the library's.
func (e *Error) Unwrap() error { return e.EstimatorErr }

// Error implements error: "session: <code>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return "session: " + e.Code
	}
	return "session: " + e.Code + ": " + e.Message
}

// Is reports whether target is an *Error with the same status, so that
// errors.Is(err, ErrDuplicateID) holds for every duplicate-id failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t != nil && t.Status == e.Status
}

// CauseError decodes Cause (set on ErrTainted) as an *Error, or returns nil.
func (e *Error) CauseError() *Error {
	if e == nil || len(e.Cause) == 0 {
		return nil
	}
	var inner struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(e.Cause, &inner) != nil {
		return nil
	}
	status := int32(-1)
	if s := ErrorForCode(inner.Code); s != nil {
		status = s.Status
	}
	raw := append(append([]byte(`{"error":`), e.Cause...), '}')
	return newError(status, raw)
}

// The sentinels for errors.Is, one per status code this binding names. Their status
// values come from the library itself (see statuses), so they cannot drift from it.
var (
	ErrInvalidArgument = named("invalid_argument")
	ErrInvalidJSON     = named("invalid_json")
	ErrInvalidEntry    = named("invalid_entry")
	ErrDuplicateID     = named("duplicate_id")
	ErrMissingParent   = named("missing_parent")
	ErrCycle           = named("cycle")
	ErrUnknownLeaf     = named("unknown_leaf")
	ErrCorruptLine     = named("corrupt_line")
	ErrNeedsRepair     = named("needs_repair")
	ErrTainted         = named("tainted")
	ErrIO              = named("io")
	ErrInternal        = named("internal")
	ErrLocked          = named("locked")
	ErrFileChanged     = named("file_changed")
	ErrReadOnly        = named("read_only")
	ErrWrongProcess    = named("wrong_process")
	// ErrInvalidCompaction: a compaction's firstKeptEntryId is not a valid cut on its
	// path (Reason "unknown_entry", "not_on_path", "not_interaction_start" or
	// "pending_tool_calls"; CompactionID, FirstKeptEntryID).
	ErrInvalidCompaction = named("invalid_compaction")
	// ErrToolPairing: a tool call and its result do not pair (Reason "orphan_result",
	// "duplicate_tool_call", "duplicate_tool_result" or "missing_result"; EntryID,
	// ToolCallID, InteractionStartID).
	ErrToolPairing = named("tool_pairing")
	// ErrCancelled: a progress callback asked a long call to stop; nothing was
	// written (session_import_with_progress, which this binding does not wrap yet).
	ErrCancelled = named("cancelled")
)

// ErrClosed is returned by every call on a Store after Close.
var ErrClosed = errors.New("session: store is closed")

// statuses is the library's status table, read once with session_status_name over
// increasing codes from 1 until it answers "unknown": one sentinel per code, including
// codes newer than this binding.
var statuses = readStatusTable()

// maxStatus bounds the walk in case a library never answers "unknown".
const maxStatus = 1 << 10

func readStatusTable() []*Error {
	var table []*Error
	for status := int32(1); status < maxStatus; status++ {
		name := statusName(status)
		if name == "unknown" {
			break
		}
		table = append(table, &Error{Status: status, Code: name, Offset: -1})
	}
	return table
}

// ErrorForCode returns the sentinel of the status the library names code (e.g.
// "missing_parent"), for errors.Is on codes this binding has no variable for; nil when
// the library has no such code.
func ErrorForCode(code string) *Error {
	for _, s := range statuses {
		if s.Code == code {
			return s
		}
	}
	return nil
}

// named is the sentinel of code; a code the library does not have gets status -1,
// which no error carries (TestEveryNamedSentinelIsInTheLibrary fails on it).
func named(code string) *Error {
	if s := ErrorForCode(code); s != nil {
		return s
	}
	return &Error{Status: -1, Code: code, Offset: -1}
}

// Warning is a non-fatal finding, e.g. {"code":"unterminated_tail","line":3}.
type Warning struct {
	Code string          // e.g. "unterminated_tail"
	Line int64           // 1-based physical line, 0 when absent
	Raw  json.RawMessage // the warning object as the library wrote it
}

// UnmarshalJSON keeps the raw object beside the decoded fields.
func (w *Warning) UnmarshalJSON(b []byte) error {
	var fields struct {
		Code string `json:"code"`
		Line int64  `json:"line"`
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	*w = Warning{Code: fields.Code, Line: fields.Line, Raw: append(json.RawMessage(nil), b...)}
	return nil
}

// MarshalJSON writes the raw object back (or code and line when there is none).
func (w Warning) MarshalJSON() ([]byte, error) {
	if len(w.Raw) > 0 {
		return w.Raw, nil
	}
	return json.Marshal(struct {
		Code string `json:"code"`
		Line int64  `json:"line,omitempty"`
	}{w.Code, w.Line})
}

// Diagnostic is what a salvage open found wrong with one line: "corrupt_line" (skipped,
// with Reason and Message), "duplicate_id" (skipped, with ID) or "orphan" (loaded, but
// its parent is not on an earlier good line; with ID and ParentID).
type Diagnostic struct {
	Line     int64
	Code     string
	Reason   string
	Message  string
	ID       string
	ParentID string
	Raw      json.RawMessage // the diagnostic object as the library wrote it
}

// UnmarshalJSON keeps the raw object beside the decoded fields.
func (d *Diagnostic) UnmarshalJSON(b []byte) error {
	var f struct {
		Line     int64  `json:"line"`
		Code     string `json:"code"`
		Reason   string `json:"reason"`
		Message  string `json:"message"`
		ID       string `json:"id"`
		ParentID string `json:"parentId"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*d = Diagnostic{f.Line, f.Code, f.Reason, f.Message, f.ID, f.ParentID, append(json.RawMessage(nil), b...)}
	return nil
}

// MarshalJSON writes the raw object back.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	if len(d.Raw) > 0 {
		return d.Raw, nil
	}
	return json.Marshal(struct {
		Line int64  `json:"line"`
		Code string `json:"code"`
	}{d.Line, d.Code})
}

// newError builds the *Error of a failed call from its status and error JSON.
func newError(status int32, raw []byte) *Error {
	e := &Error{Status: status, Code: statusName(status), Offset: -1}
	if len(raw) > 0 {
		e.Raw = append(json.RawMessage(nil), raw...)
	}
	var env struct {
		Error *struct {
			Code         string          `json:"code"`
			Message      string          `json:"message"`
			Pointer      string          `json:"pointer"`
			Offset       *int64          `json:"offset"`
			ID           string          `json:"id"`
			ChildID      string          `json:"childId"`
			ParentID     string          `json:"parentId"`
			Line         int64           `json:"line"`
			Reason       string          `json:"reason"`
			Argument     string          `json:"argument"`
			Op           string          `json:"op"`
			OSError      int             `json:"osError"`
			Path         string          `json:"path"`
			ExpectedSize int64           `json:"expectedSize"`
			ActualSize   int64           `json:"actualSize"`
			OwnerPID     int             `json:"ownerPid"`
			PID          int             `json:"pid"`
			Warnings     []Warning       `json:"warnings"`
			Cause        json.RawMessage `json:"cause"`

			CompactionID       string `json:"compactionId"`
			FirstKeptEntryID   string `json:"firstKeptEntryId"`
			EntryID            string `json:"entryId"`
			ToolCallID         string `json:"toolCallId"`
			InteractionStartID string `json:"interactionStartId"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Error == nil {
		e.Message = fmt.Sprintf("undecodable error JSON: %q", raw)
		return e
	}
	d := env.Error
	if d.Code != "" {
		e.Code = d.Code
	}
	e.Message, e.Pointer, e.ID, e.ChildID, e.ParentID = d.Message, d.Pointer, d.ID, d.ChildID, d.ParentID
	e.Line, e.Reason, e.Argument, e.Op, e.OSError = d.Line, d.Reason, d.Argument, d.Op, d.OSError
	e.Path, e.ExpectedSize, e.ActualSize, e.OwnerPID, e.PID = d.Path, d.ExpectedSize, d.ActualSize, d.OwnerPID, d.PID
	e.Warnings, e.Cause = d.Warnings, d.Cause
	e.CompactionID, e.FirstKeptEntryID, e.EntryID = d.CompactionID, d.FirstKeptEntryID, d.EntryID
	e.ToolCallID, e.InteractionStartID = d.ToolCallID, d.InteractionStartID
	if d.Offset != nil {
		e.Offset = *d.Offset
	}
	return e
}

// argumentError is the ErrInvalidArgument this binding returns itself, without calling
// the library, for an argument that a C string cannot carry.
func argumentError(argument, message string) *Error {
	type object struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Argument string `json:"argument"`
	}
	raw, _ := json.Marshal(struct {
		Error object `json:"error"`
	}{object{ErrInvalidArgument.Code, message, argument}})
	return newError(ErrInvalidArgument.Status, raw)
}
