package session

/*
#include <stdint.h>
#include <stdlib.h>
#include <session.h>

extern double sessionGoEstimate(char *message, size_t n, uintptr_t handle);

static double session_go_estimate(const char *message, size_t n, void *user_data)
{
	return sessionGoEstimate((char *)message, n, (uintptr_t)user_data);
}

// The handle travels as an integer so that no Go value is converted to a pointer; 0
// (never a valid cgo.Handle) means the library's default estimator.
static SessionStatus session_go_store_build_context(SessionStore *store, const char *leaf,
                                                    const char *options, uintptr_t handle,
                                                    char **out)
{
	return session_store_build_context(store, leaf, options,
	                                   handle ? session_go_estimate : NULL,
	                                   (void *)handle, out);
}
*/
import "C"

import (
	"encoding/json"
	"runtime/cgo"
	"unsafe"
)

// OnDefect says what BuildContext does with a tool-pairing defect (an orphan or
// duplicate result, a duplicate call, an unanswered call).
type OnDefect string

const (
	OnDefectError OnDefect = "error" // fail with ErrToolPairing (the default)
	OnDefectSkip  OnDefect = "skip"  // drop each defective interaction whole; listed in Context.Skipped
	OnDefectKeep  OnDefect = "keep"  // keep them; listed in Context.Defects
	// OnDefectSynthesize answers each unanswered call with a synthetic error result
	// (ContextOptions.SynthesizedText, "aborted" by default) right after the reply
	// holding it, listed in Context.Defects with Action "synthesized"; any other
	// defect fails as with OnDefectError.
	OnDefectSynthesize OnDefect = "synthesize"
)

// Profile names an agent whose own send-time rules BuildContext follows
// (docs/contract.md §12): what pi, Claude Code or Codex sends when it resumes the
// session. It applies while OnDefect is OnDefectError. The zero value "" is the
// library's default, ProfileAuto.
type Profile string

const (
	ProfileAuto       Profile = "auto"        // the default: the agent an imported session came from; none for a native one
	ProfileNone       Profile = "none"        // no agent's rules, whatever the session's origin
	ProfilePi         Profile = "pi"          // failed replies left out; "No result provided" for a missing result
	ProfileClaudeCode Profile = "claude-code" // split replies merged by message id; a part whose calls have no result left out
	ProfileCodex      Profile = "codex"       // "aborted" after the call; outputs without a call dropped; replacement history, or the user messages before a compaction then its summary
)

// Budget bounds the context's tokens: whole interactions are kept from the newest
// backwards while they fit in MaxTokens - ReservedOutput - SafetyMargin - the summary.
// The newest interaction always stays, even alone over budget.
type Budget struct {
	MaxTokens      float64 `json:"maxTokens"`
	ReservedOutput float64 `json:"reservedOutput"`
	SafetyMargin   float64 `json:"safetyMargin"`
}

// ContextOptions for BuildContext. The zero value is the default: OnDefectError, no
// budget, a summary message without wrapping text, extension roles accepted, and
// ProfileAuto (an imported session is sent as its agent sends it).
type ContextOptions struct {
	OnDefect OnDefect // "" is OnDefectError
	Budget   *Budget  // nil: no budget (and the estimator is never called)
	// NoSummaryMessage leaves out the synthetic user message that carries the
	// compaction's summary.
	NoSummaryMessage bool
	// SummaryPrefix and SummarySuffix wrap the summary's text in that message.
	SummaryPrefix, SummarySuffix string
	// StrictRoles rejects extension roles and blocks with ErrInvalidEntry.
	StrictRoles bool
	// SynthesizedText is the text of the results OnDefectSynthesize writes; "" is
	// the library's default, "aborted".
	SynthesizedText string
	// Profile sends the messages as that agent does; "" is ProfileAuto, ProfileNone
	// applies no agent's rules.
	Profile Profile
}

// toJSON is the options object of session_build_context: only what differs from the
// defaults.
func (o ContextOptions) toJSON() []byte {
	v := struct {
		OnDefect       OnDefect `json:"onDefect,omitempty"`
		Budget         *Budget  `json:"budget,omitempty"`
		SummaryMessage *bool    `json:"summaryMessage,omitempty"`
		SummaryPrefix  string   `json:"summaryPrefix,omitempty"`
		SummarySuffix  string   `json:"summarySuffix,omitempty"`
		StrictRoles    bool     `json:"strictRoles,omitempty"`
		Synthesized    string   `json:"synthesizedText,omitempty"`
		Profile        Profile  `json:"profile,omitempty"`
	}{OnDefect: o.OnDefect, Budget: o.Budget, SummaryPrefix: o.SummaryPrefix,
		SummarySuffix: o.SummarySuffix, StrictRoles: o.StrictRoles,
		Synthesized: o.SynthesizedText, Profile: o.Profile}
	if o.NoSummaryMessage {
		no := false
		v.SummaryMessage = &no
	}
	b, _ := json.Marshal(v)
	return b
}

// Context is what the model should see for a leaf: the messages to send and what the
// host needs for its next compaction.
type Context struct {
	LeafID string `json:"leafId"`
	// Compaction is the compaction in force (the latest on the path), nil when none.
	Compaction *CompactionInfo `json:"compaction"`
	// Messages: the synthetic summary message (when there is a compaction), then the
	// kept messages, byte for byte as MessagesOnPath returns them.
	Messages []json.RawMessage `json:"messages"`
	// KeptEntryIDs is aligned 1:1 with the messages after the summary (which has no
	// entry); "" for a result OnDefectSynthesize wrote, which has none either.
	KeptEntryIDs []string      `json:"keptEntryIds"`
	Interactions []Interaction `json:"interactions"`
	// Metadata is a JSON object: the last value of each metadata key over the whole
	// path (before the cut too), keys in first-set order.
	Metadata json.RawMessage `json:"metadata"`
	Budget   *BudgetReport   `json:"budget"`  // nil without a budget
	Skipped  []Defect        `json:"skipped"` // OnDefectSkip: the interactions dropped
	Defects  []Defect        `json:"defects"` // OnDefectKeep, OnDefectSynthesize: the defects kept or answered
	// Raw is the whole context object as the library wrote it.
	Raw json.RawMessage `json:"-"`
}

// CompactionInfo is the compaction a Context was built from.
type CompactionInfo struct {
	ID               string          `json:"id"`
	FirstKeptEntryID *string         `json:"firstKeptEntryId"` // nil: nothing kept from before it
	TokensBefore     float64         `json:"tokensBefore"`
	Summary          json.RawMessage `json:"summary"` // a JSON string or object, as written
	Details          json.RawMessage `json:"details,omitempty"`
}

// Interaction is one run of Context.Messages that starts at a user message (or at the
// first kept message).
type Interaction struct {
	Start        int    `json:"start"` // index into Context.Messages
	Count        int    `json:"count"`
	FirstEntryID string `json:"firstEntryId"`
	// CutPoint says whether FirstEntryID is a valid firstKeptEntryId for the next
	// compaction.
	CutPoint bool     `json:"cutPoint"`
	Tokens   *float64 `json:"tokens"` // only with a budget
}

// BudgetReport is what the budget kept and why.
type BudgetReport struct {
	MaxTokens           float64 `json:"maxTokens"`
	ReservedOutput      float64 `json:"reservedOutput"`
	SafetyMargin        float64 `json:"safetyMargin"`
	Available           float64 `json:"available"` // MaxTokens - ReservedOutput - SafetyMargin
	Used                float64 `json:"used"`      // the summary plus the kept interactions
	Reason              string  `json:"reason"`    // "within_budget", "trimmed" or "single_interaction_overflow"
	DroppedInteractions int     `json:"droppedInteractions"`
	// SuggestedFirstKeptEntryID is the first entry of the oldest kept interaction when
	// something was dropped and it is a cut point; nil otherwise.
	SuggestedFirstKeptEntryID *string `json:"suggestedFirstKeptEntryId"`
}

// Defect is a tool-pairing defect: Reason is "orphan_result", "duplicate_tool_call",
// "duplicate_tool_result" or "missing_result".
type Defect struct {
	InteractionStartID string `json:"interactionStartId"`
	EntryID            string `json:"entryId"`
	ToolCallID         string `json:"toolCallId"`
	Reason             string `json:"reason"`
	// Action is "synthesized" for a call answered with a synthetic result, "dropped"
	// for a result a Profile left out, else "".
	Action string `json:"action,omitempty"`
}

func decodeContext(text []byte) (*Context, error) {
	c := &Context{}
	if err := decode(text, c); err != nil {
		return nil, err
	}
	c.Raw = json.RawMessage(text)
	return c, nil
}

// BuildContext returns what the model should see for leaf over entries, a JSON array of
// entries in any order, counting a budget's tokens with the default estimator
// (ceil(bytes / 4) of each message's JSON). Errors, in this order: ErrInvalidArgument
// (bad options), ErrInvalidJSON / ErrInvalidEntry / ErrDuplicateID (the entries),
// ErrUnknownLeaf, ErrMissingParent / ErrCycle (the path), ErrInvalidCompaction
// (CompactionID, FirstKeptEntryID, Reason), ErrToolPairing (EntryID, ToolCallID,
// Reason, InteractionStartID).
func BuildContext(entries []byte, leaf string, options ContextOptions) (*Context, error) {
	co, _ := cString(options.toJSON(), "options_json") // marshalled JSON holds no NUL byte
	defer C.free(unsafe.Pointer(co))
	text, err := callEntriesLeaf(entries, leaf, func(e, l *C.char, out **C.char) C.SessionStatus {
		return C.session_build_context(e, l, co, out)
	})
	if err != nil {
		return nil, err
	}
	return decodeContext(text)
}

// BuildContext is BuildContext over the store's committed entries, through its index
// (the cost grows with the path, not the store). estimate counts a budget's tokens;
// nil means the default estimator. A store that needs repair builds from its committed
// prefix.
func (s *Store) BuildContext(leaf string, options ContextOptions, estimate TokenEstimator) (*Context, error) {
	cl, err := cStringFrom(leaf, "leaf_id")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cl))
	co, _ := cString(options.toJSON(), "options_json")
	defer C.free(unsafe.Pointer(co))
	var e *estimation
	var handle C.uintptr_t
	if estimate != nil {
		e = &estimation{estimate: estimate}
		h := cgo.NewHandle(e)
		defer h.Delete()
		handle = C.uintptr_t(h)
	}
	text, err := s.do(func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_go_store_build_context(p, cl, co, handle, out)
	})
	if e != nil && e.panicked {
		panic(e.panicVal)
	}
	if err != nil {
		if lib, ok := err.(*Error); ok && e != nil && e.err != nil {
			lib.EstimatorErr = e.err
		}
		return nil, err
	}
	return decodeContext(text)
}

// MemoryOptions for OpenMemoryWith. The zero value is OpenMemory's default.
type MemoryOptions struct {
	// StrictRoles rejects entries with extension roles or blocks (ErrInvalidEntry).
	StrictRoles bool
}

// OpenMemoryWith opens a new, empty store in memory with options.
func OpenMemoryWith(options MemoryOptions) (*Store, error) {
	b, _ := json.Marshal(struct {
		StrictRoles bool `json:"strictRoles,omitempty"`
	}{options.StrictRoles})
	co, _ := cString(b, "options_json")
	defer C.free(unsafe.Pointer(co))
	var p *C.SessionStore
	if status := C.session_memory_store_open_with(co, &p); status != C.SESSION_OK {
		return nil, newError(int32(status), nil)
	}
	return newStore(p), nil
}
