package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

// compactedExample is the shipped example extended with the entries of docs/contract.md §10.
var compactedExample = filepath.Join("..", "..", "examples", "tiny-pi-compacted.jsonl")

// compactedLines returns the example's twelve lines, in append order.
func compactedLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(compactedExample)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// compaction is §10's c-1 under parent with firstKeptEntryId fke ("null" for JSON null).
func compaction(parent, fke string) []byte {
	f := "null"
	if fke != "null" {
		f = `"` + fke + `"`
	}
	return []byte(`{"id":"c-1","parentId":"` + parent + `","timestamp":1733000010000,"type":"compaction",` +
		`"summary":"User asked for the project name; it is tiny-pi.","firstKeptEntryId":` + f +
		`,"tokensBefore":1200}`)
}

func keptIDs(c *session.Context) string { return strings.Join(c.KeptEntryIDs, ",") }

func TestBuildContextForU3KeepsSummaryAndTheCutTail(t *testing.T) {
	store, _, err := session.OpenWith(compactedExample, session.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := store.BuildContext("u-3", session.ContextOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LeafID != "u-3" || len(c.Messages) != 6 || keptIDs(c) != "u-2,a-pkg,r-pkg,a-ver,u-3" {
		t.Fatalf("leaf %q, %d messages, kept %s", c.LeafID, len(c.Messages), keptIDs(c))
	}
	if c.Compaction == nil || c.Compaction.ID != "c-1" || c.Compaction.FirstKeptEntryID == nil ||
		*c.Compaction.FirstKeptEntryID != "u-2" || c.Compaction.TokensBefore != 1200 ||
		string(c.Compaction.Summary) != `"User asked for the project name; it is tiny-pi."` {
		t.Fatalf("compaction %+v", c.Compaction)
	}
	summary := `{"role":"user","content":[{"type":"text","text":"User asked for the project name; it is tiny-pi."}],"timestamp":1733000010000}`
	if string(c.Messages[0]) != summary {
		t.Fatalf("summary message %s", c.Messages[0])
	}
	if string(c.Metadata) != `{"cwd":"/workspace/tiny-pi"}` {
		t.Fatalf("metadata %s", c.Metadata)
	}
	if c.Budget != nil || len(c.Skipped) != 0 || len(c.Defects) != 0 {
		t.Fatalf("no budget, no defects: %s", c.Raw)
	}
	if len(c.Interactions) != 2 || c.Interactions[0].Start != 1 || c.Interactions[0].Count != 4 ||
		c.Interactions[0].FirstEntryID != "u-2" || !c.Interactions[0].CutPoint ||
		c.Interactions[0].Tokens != nil || c.Interactions[1].FirstEntryID != "u-3" {
		t.Fatalf("interactions %+v", c.Interactions)
	}
	all, err := store.MessagesOnPath("u-3")
	if err != nil || len(all) != 9 {
		t.Fatalf("messages_on_path(u-3) has %d messages, want all nine: %v", len(all), err)
	}
	for i, m := range c.Messages[1:] {
		if !bytes.Equal(m, all[4+i]) {
			t.Fatalf("kept message %d differs from messages_on_path: %s vs %s", i, m, all[4+i])
		}
	}

	// The pure form over the same entries gives the same object.
	entries, _ := store.Entries()
	array, _ := json.Marshal(entries)
	pure, err := session.BuildContext(array, "u-3", session.ContextOptions{})
	if err != nil || !bytes.Equal(pure.Raw, c.Raw) {
		t.Fatalf("pure build_context differs: %v\n%s\n%s", err, pure.Raw, c.Raw)
	}
}

func TestBuildContextWithoutCompactionIsMessagesOnPath(t *testing.T) {
	store := memoryWith(t, compactedLines(t))
	c, err := store.BuildContext("a-alt", session.ContextOptions{}, nil)
	if err != nil || c.Compaction != nil || keptIDs(c) != "u-1,a-alt" {
		t.Fatalf("a-alt: %v %s", err, c.Raw)
	}
	c, err = store.BuildContext("a-final", session.ContextOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := store.MessagesOnPath("a-final")
	got, _ := json.Marshal(c.Messages)
	wantText, _ := json.Marshal(want)
	if !bytes.Equal(got, wantText) {
		t.Fatalf("a-final: %s, want %s", got, wantText)
	}
}

func TestAppendRefusesACompactionThatCutsBadly(t *testing.T) {
	base := compactedLines(t)[:10] // through a-ver
	cases := []struct{ parent, fke, reason string }{
		{"a-ver", "a-pkg", "not_interaction_start"},
		{"a-ver", "r-pkg", "not_interaction_start"},
		{"a-ver", "a-alt", "not_on_path"},
		{"a-ver", "nope", "unknown_entry"},
		{"a-pkg", "null", "pending_tool_calls"},
	}
	for _, tc := range cases {
		store := memoryWith(t, base)
		_, err := store.Append(compaction(tc.parent, tc.fke))
		e := asError(t, err, session.ErrInvalidCompaction)
		wantFke := tc.fke
		if wantFke == "null" {
			wantFke = ""
		}
		if e.Reason != tc.reason || e.CompactionID != "c-1" || e.FirstKeptEntryID != wantFke {
			t.Fatalf("%s/%s: reason %q compaction %q fke %q: %s", tc.parent, tc.fke, e.Reason,
				e.CompactionID, e.FirstKeptEntryID, e.Raw)
		}
	}
	store := memoryWith(t, base)
	if _, err := store.Append(compaction("a-ver", "meta-cwd")); err != nil {
		t.Fatalf("firstKeptEntryId on metadata before u-2 is accepted: %v", err)
	}
	store = memoryWith(t, base)
	if _, err := store.Append(compaction("a-ver", "null")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append([]byte(compactedLines(t)[11])); err != nil {
		t.Fatal(err)
	}
	c, err := store.BuildContext("u-3", session.ContextOptions{}, nil)
	if err != nil || len(c.Messages) != 2 || keptIDs(c) != "u-3" {
		t.Fatalf("null keeps nothing before the compaction: %v %s", err, c.Raw)
	}
}

func TestOrphanResultFailsOrIsSkipped(t *testing.T) {
	orphan := `{"id":"r-orphan","parentId":"a-final","timestamp":1733000006000,"type":"message",` +
		`"message":{"role":"toolResult","toolCallId":"call-9","toolName":"read","content":[],"isError":false}}`
	store := memoryWith(t, append(compactedLines(t)[:4], orphan))
	_, err := store.BuildContext("r-orphan", session.ContextOptions{}, nil)
	e := asError(t, err, session.ErrToolPairing)
	if e.Reason != "orphan_result" || e.EntryID != "r-orphan" || e.ToolCallID != "call-9" ||
		e.InteractionStartID != "u-1" {
		t.Fatalf("pairing error %s", e.Raw)
	}
	c, err := store.BuildContext("r-orphan", session.ContextOptions{OnDefect: session.OnDefectSkip}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Defect{InteractionStartID: "u-1", EntryID: "r-orphan", ToolCallID: "call-9", Reason: "orphan_result"}
	if len(c.Skipped) != 1 || c.Skipped[0] != want || len(c.Messages) != 0 {
		t.Fatalf("skip: %s", c.Raw)
	}
	c, err = store.BuildContext("r-orphan", session.ContextOptions{OnDefect: session.OnDefectKeep}, nil)
	if err != nil || len(c.Defects) != 1 || c.Defects[0] != want || len(c.Messages) != 5 {
		t.Fatalf("keep: %v %s", err, c.Raw)
	}
}

func TestOnDefectSynthesizeAnswersAnUnansweredCall(t *testing.T) {
	user := `{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"go"}}`
	call := `{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant",` +
		`"content":[{"type":"toolCall","id":"call-1","name":"bash","arguments":{}}]}}`
	store := memoryWith(t, []string{user, call})
	_, err := store.BuildContext("a-1", session.ContextOptions{}, nil)
	asError(t, err, session.ErrToolPairing)
	c, err := store.BuildContext("a-1", session.ContextOptions{OnDefect: session.OnDefectSynthesize,
		SynthesizedText: "No result provided"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"toolResult","toolCallId":"call-1","toolName":"bash","content":[{"type":"text",` +
		`"text":"No result provided"}],"isError":true,"timestamp":2,"synthetic":true}`
	if len(c.Messages) != 3 || string(c.Messages[2]) != want || c.KeptEntryIDs[2] != "" ||
		len(c.Defects) != 1 || c.Defects[0].Action != "synthesized" {
		t.Fatalf("synthesize: %s", c.Raw)
	}
}

func TestProfileSendsAsThatAgentDoes(t *testing.T) {
	user := `{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"go"}}`
	call := `{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant",` +
		`"content":[{"type":"toolCall","id":"call-1","name":"bash","arguments":{}}]}}`
	store := memoryWith(t, []string{user, call})
	c, err := store.BuildContext("a-1", session.ContextOptions{Profile: session.ProfilePi}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		Content []struct{ Text string } `json:"content"`
	}
	if len(c.Messages) != 3 || json.Unmarshal(c.Messages[2], &result) != nil ||
		len(result.Content) != 1 || result.Content[0].Text != "No result provided" {
		t.Fatalf("pi: %s", c.Raw)
	}
	// A native session has no agent: auto is no profile, and the error names onDefect.
	_, err = store.BuildContext("a-1", session.ContextOptions{Profile: session.ProfileAuto}, nil)
	e := asError(t, err, session.ErrToolPairing)
	if !strings.Contains(e.Message, `choose "onDefect"`) {
		t.Fatalf("a native session's pairing error names onDefect: %q", e.Message)
	}
}

// The zero value of ContextOptions sends an imported session as its agent does
// (the library's default profile, auto); ProfileNone turns that off, and the error
// then names the profile that answers it.
func TestDefaultProfileIsTheImportedAgents(t *testing.T) {
	root := `{"id":"root","parentId":null,"timestamp":0,"type":"metadata","key":"pi.session",` +
		`"value":{},"importedFormat":"pi"}`
	user := `{"id":"u-1","parentId":"root","timestamp":1,"type":"message","message":{"role":"user","content":"go"}}`
	call := `{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant",` +
		`"content":[{"type":"toolCall","id":"call-1","name":"bash","arguments":{}}]}}`
	store := memoryWith(t, []string{root, user, call})
	c, err := store.BuildContext("a-1", session.ContextOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 3 || !strings.Contains(string(c.Messages[2]), "No result provided") {
		t.Fatalf("default: %s", c.Raw)
	}
	_, err = store.BuildContext("a-1", session.ContextOptions{Profile: session.ProfileNone}, nil)
	e := asError(t, err, session.ErrToolPairing)
	if !strings.Contains(e.Message, `imported from pi; build it with "profile":"auto"`) {
		t.Fatalf("the error names the profile: %q", e.Message)
	}
}

func TestEstimatorIsCalledOncePerMessageWithItsJSON(t *testing.T) {
	store := memoryWith(t, compactedLines(t))
	var seen []string
	estimate := func(m json.RawMessage) (float64, error) {
		if !json.Valid(m) {
			t.Errorf("estimator got invalid JSON %q", m)
		}
		seen = append(seen, string(m))
		return 10, nil
	}
	opts := session.ContextOptions{Budget: &session.Budget{MaxTokens: 1000}}
	c, err := store.BuildContext("u-3", opts, estimate)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 6 {
		t.Fatalf("estimator called %d times, want 6 (summary + 5 kept)", len(seen))
	}
	for _, m := range c.Messages {
		found := false
		for _, s := range seen {
			found = found || s == string(m)
		}
		if !found {
			t.Fatalf("message never estimated: %s", m)
		}
	}
	b := c.Budget
	if b == nil || b.Reason != "within_budget" || b.Used != 60 || b.Available != 1000 ||
		b.DroppedInteractions != 0 || b.SuggestedFirstKeptEntryID != nil {
		t.Fatalf("budget %+v", b)
	}
	if c.Interactions[0].Tokens == nil || *c.Interactions[0].Tokens != 40 {
		t.Fatalf("interaction tokens %s", c.Raw)
	}

	// 25 tokens hold the summary (10) and u-3 (10), not u-2's four messages (40).
	seen = nil
	opts.Budget = &session.Budget{MaxTokens: 30, ReservedOutput: 3, SafetyMargin: 2}
	c, err = store.BuildContext("u-3", opts, estimate)
	if err != nil {
		t.Fatal(err)
	}
	b = c.Budget
	if b.Reason != "trimmed" || b.DroppedInteractions != 1 || b.Available != 25 || b.Used != 20 ||
		b.SuggestedFirstKeptEntryID == nil || *b.SuggestedFirstKeptEntryID != "u-3" ||
		keptIDs(c) != "u-3" || len(c.Messages) != 2 {
		t.Fatalf("trimmed: %s", c.Raw)
	}
}

func TestEstimatorFailureIsAnErrorNotACrash(t *testing.T) {
	store := memoryWith(t, compactedLines(t))
	opts := session.ContextOptions{Budget: &session.Budget{MaxTokens: 1000}}
	mine := errors.New("tokenizer unavailable")
	calls := 0
	_, err := store.BuildContext("u-3", opts, func(json.RawMessage) (float64, error) {
		calls++
		return 0, mine
	})
	e := asError(t, err, session.ErrInvalidArgument)
	if !errors.Is(err, mine) || e.EstimatorErr != mine || calls != 1 || e.EntryID == "" {
		t.Fatalf("estimator error: %v, calls %d, entry %q", err, calls, e.EntryID)
	}
	for _, bad := range []float64{math.NaN(), -1, math.Inf(1)} {
		_, err = store.BuildContext("u-3", opts, func(json.RawMessage) (float64, error) { return bad, nil })
		if e := asError(t, err, session.ErrInvalidArgument); e.EstimatorErr != nil {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("the estimator's panic is re-raised by BuildContext, got %v", r)
			}
		}()
		_, _ = store.BuildContext("u-3", opts, func(json.RawMessage) (float64, error) { panic("boom") })
	}()
	// The store is still usable afterwards.
	if _, err := store.BuildContext("u-3", opts, nil); err != nil {
		t.Fatal(err)
	}
}

func TestStrictRolesRejectsExtensionRoles(t *testing.T) {
	ext := []byte(`{"id":"x-1","parentId":null,"timestamp":1,"type":"message",` +
		`"message":{"role":"bashExecution","command":"ls","output":"a\n"}}`)
	strict, err := session.OpenMemoryWith(session.MemoryOptions{StrictRoles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	_, err = strict.Append(ext)
	asError(t, err, session.ErrInvalidEntry)

	open, err := session.OpenMemoryWith(session.MemoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.Append(ext); err != nil {
		t.Fatal(err)
	}
	c, err := open.BuildContext("x-1", session.ContextOptions{}, nil)
	if err != nil || len(c.Messages) != 1 || string(c.Messages[0]) != `{"role":"bashExecution","command":"ls","output":"a\n"}` {
		t.Fatalf("extension message kept byte-exact: %v %s", err, c.Raw)
	}
	_, err = open.BuildContext("x-1", session.ContextOptions{StrictRoles: true}, nil)
	asError(t, err, session.ErrInvalidEntry)
}

func TestLabelMustNameACommittedEntry(t *testing.T) {
	store := memoryWith(t, chapter)
	_, err := store.Append([]byte(`{"id":"l-1","parentId":"meta-cwd","timestamp":1733000006000,"type":"metadata",` +
		`"key":"session.label","value":{"targetId":"ghost","label":"x"}}`))
	if e := asError(t, err, session.ErrUnknownLeaf); e.ID != "ghost" {
		t.Fatalf("label of an unknown target: %s", e.Raw)
	}
}

func TestStrictRolesOpenRefusesAFileWithAnExtensionEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	ext := `{"id":"x-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"custom","data":1}}`
	if err := os.WriteFile(path, []byte(chapter[0]+"\n"+ext+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := session.OpenWith(path, session.Options{ReadOnly: true, StrictRoles: true})
	if e := asError(t, err, session.ErrCorruptLine); e.Line != 2 {
		t.Fatalf("strict open: line %d: %s", e.Line, e.Raw)
	}
	s, _, err := session.OpenWith(path, session.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
