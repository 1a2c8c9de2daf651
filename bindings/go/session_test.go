package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

// The chapter's fixed tree (docs/contract.md §1) in append order: the lines of the
// checked-in examples/tiny-pi.jsonl, read when the tests start (go test runs in this
// folder), so every test appends those bytes rather than a copy typed here.
var chapter = exampleLines("../../examples/tiny-pi.jsonl")

func exampleLines(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 6 {
		panic(fmt.Sprintf("%s: want 6 lines, read %d", path, len(lines)))
	}
	return lines
}

// entry builds a small user-message entry; parent "" means a root.
func entry(id, parent string) []byte {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return []byte(`{"id":"` + id + `","parentId":` + p +
		`,"timestamp":1,"type":"message","message":{"role":"user","content":"x"}}`)
}

// ids returns the "id" members of a list of entries, joined with ",".
func ids(t *testing.T, entries []json.RawMessage) string {
	t.Helper()
	out := make([]string, len(entries))
	for i, e := range entries {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(e, &v); err != nil {
			t.Fatalf("entry %d is not JSON: %v: %s", i, err, e)
		}
		out[i] = v.ID
	}
	return strings.Join(out, ",")
}

func mustOpen(t *testing.T, path string) (*session.Store, session.OpenReport) {
	t.Helper()
	s, report, err := session.Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, report
}

func asError(t *testing.T, err error, want *session.Error) *session.Error {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v (%T), want %s", err, err, want.Code)
	}
	var e *session.Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(%v) failed", err)
	}
	if e.Status != want.Status || e.Code != want.Code {
		t.Fatalf("status %d %q, want %d %q", e.Status, e.Code, want.Status, want.Code)
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(e.Raw, &env) != nil || env.Error.Code != want.Code {
		t.Fatalf("Raw is not the error JSON of %q: %s", want.Code, e.Raw)
	}
	return e
}

func TestVersion(t *testing.T) {
	want := os.Getenv("SESSION_EXPECTED_VERSION") // set by run_tests.sh from Cargo.toml
	got := session.Version()
	if want != "" && got != want {
		t.Fatalf("Version() = %q, want %q", got, want)
	}
	if strings.Count(got, ".") != 2 {
		t.Fatalf("Version() = %q, not X.Y.Z", got)
	}
}

// docs/contract.md §1 through a JSONL file: append six entries, close, reopen, read the paths.
func TestChapterTree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny-pi.jsonl")
	s, report := mustOpen(t, path)
	if report.State != session.StateReady || len(report.Warnings) != 0 {
		t.Fatalf("a new file: %+v", report)
	}
	for i, e := range chapter {
		r, err := s.Append(json.RawMessage(e))
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		if r.Seq != uint64(i) {
			t.Fatalf("Append(%d): seq %d", i, r.Seq)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(chapter, "\n") + "\n"; string(data) != want {
		t.Fatalf("file content:\n%s\nwant:\n%s", data, want)
	}

	s, report = mustOpen(t, path)
	if report.State != session.StateReady || s.State() != session.StateReady {
		t.Fatalf("reopened: %+v, %v", report, s.State())
	}
	p, err := s.PathTo("meta-cwd")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, p); got != "u-1,a-read,r-read,a-final,meta-cwd" {
		t.Fatalf("PathTo(meta-cwd) = %s", got)
	}
	if string(p[4]) != chapter[5] {
		t.Fatalf("meta-cwd came back changed: %s", p[4])
	}

	msgs, err := s.MessagesOnPath("meta-cwd")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 {
		t.Fatalf("MessagesOnPath(meta-cwd): %d messages: %s", len(msgs), msgs)
	}
	var roles []string
	for _, m := range msgs {
		var v struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		roles = append(roles, v.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,toolResult,assistant" {
		t.Fatalf("roles %s", got)
	}
	var call struct {
		Content []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"content"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(msgs[1], &call); err != nil {
		t.Fatal(err)
	}
	tc := call.Content[0]
	if tc.Type != "toolCall" || tc.ID != "call-1" || tc.Name != "read" ||
		string(tc.Arguments) != `{"path":"README.md"}` || call.Model != "gpt-5" {
		t.Fatalf("the toolCall is not intact: %s", msgs[1])
	}
	if !bytes.Contains(msgs[2], []byte(`"toolCallId":"call-1","toolName":"read"`)) ||
		!bytes.Contains(msgs[2], []byte(`"isError":false,"details":{"path":"README.md","bytes":33}`)) {
		t.Fatalf("the toolResult is not intact: %s", msgs[2])
	}

	alt, err := s.PathTo("a-alt")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, alt); got != "u-1,a-alt" {
		t.Fatalf("PathTo(a-alt) = %s", got)
	}

	all, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, all); got != "u-1,a-read,r-read,a-final,a-alt,meta-cwd" {
		t.Fatalf("Entries() = %s", got)
	}
	snap, err := s.Read()
	if err != nil || snap.State != session.StateReady || len(snap.Entries) != 6 || len(snap.Warnings) != 0 {
		t.Fatalf("Read() = %+v, %v", snap, err)
	}

	// The package-level functions over the same entries, shuffled.
	arr := []byte("[" + strings.Join([]string{chapter[5], chapter[2], chapter[4], chapter[0], chapter[3], chapter[1]}, ",") + "]")
	p2, err := session.PathTo(arr, "meta-cwd")
	if err != nil || ids(t, p2) != "u-1,a-read,r-read,a-final,meta-cwd" {
		t.Fatalf("session.PathTo = %v, %v", p2, err)
	}
	m2, err := session.MessagesOnPath(arr, "meta-cwd")
	if err != nil || len(m2) != 4 || !bytes.Equal(m2[1], msgs[1]) {
		t.Fatalf("session.MessagesOnPath = %s, %v", m2, err)
	}
	m3, err := session.MessagesOnPath(arr, "a-alt")
	if err != nil || len(m3) != 2 || !bytes.Contains(m3[1], []byte("我无法读取该文件")) {
		t.Fatalf("session.MessagesOnPath(a-alt) = %s, %v", m3, err)
	}
}

func TestParseEntryNormalises(t *testing.T) {
	in := []byte("{ \"id\" : \"x\", \"parentId\":null, \"timestamp\": 1.50,\n \"type\":\"metadata\",\"key\":\"k\",\"value\":{\"b\":1,\"a\":[1e2, \"\\u0041\"]}, \"extra\": true }")
	want := `{"id":"x","parentId":null,"timestamp":1.50,"type":"metadata","key":"k","value":{"b":1,"a":[1e2,"\u0041"]},"extra":true}`
	got, err := session.ParseEntry(in)
	if err != nil || string(got) != want {
		t.Fatalf("ParseEntry = %s, %v; want %s", got, err, want)
	}
}

// A file with a torn last line: needs_repair, reads work, appends refused, file unchanged.
func TestNeedsRepair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "torn.jsonl")
	torn := chapter[0] + "\n" + chapter[1] + "\n" + `{"id":"r-read","parentId":"a-re`
	if err := os.WriteFile(path, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	s, report := mustOpen(t, path)
	if report.State != session.StateNeedsRepair || s.State() != session.StateNeedsRepair {
		t.Fatalf("report %+v, state %v", report, s.State())
	}
	if len(report.Warnings) != 1 || report.Warnings[0].Code != "unterminated_tail" || report.Warnings[0].Line != 3 {
		t.Fatalf("warnings %+v", report.Warnings)
	}
	entries, err := s.Entries()
	if err != nil || ids(t, entries) != "u-1,a-read" {
		t.Fatalf("Entries() on needs_repair: %v, %v", entries, err)
	}
	snap, err := s.Read()
	if err != nil || snap.State != session.StateNeedsRepair || len(snap.Warnings) != 1 {
		t.Fatalf("Read() = %+v, %v", snap, err)
	}

	_, err = s.Append([]byte(chapter[2]))
	e := asError(t, err, session.ErrNeedsRepair)
	if len(e.Warnings) != 1 || e.Warnings[0].Code != "unterminated_tail" || e.Warnings[0].Line != 3 {
		t.Fatalf("needs_repair warnings: %+v", e.Warnings)
	}
	if data, _ := os.ReadFile(path); string(data) != torn {
		t.Fatalf("the file changed: %q", data)
	}
	if s.State() != session.StateNeedsRepair {
		t.Fatalf("state after a refused append: %v", s.State())
	}
	b, err := json.Marshal(report)
	if err != nil || string(b) != `{"state":"needs_repair","warnings":[{"code":"unterminated_tail","line":3}],"complete":true}` {
		t.Fatalf("OpenReport marshals to %s, %v", b, err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	m, err := session.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Append(entry("u-1", "")); err != nil {
		t.Fatal(err)
	}

	t.Run("invalid_json", func(t *testing.T) {
		_, err := session.ParseEntry([]byte(`{"id":"x",`))
		e := asError(t, err, session.ErrInvalidJSON)
		if e.Pointer != "/id" || e.Offset != 10 {
			t.Fatalf("pointer %q offset %d", e.Pointer, e.Offset)
		}
		_, err = session.ParseEntry([]byte(`{"id":"x","id":"y"}`))
		asError(t, err, session.ErrInvalidJSON)
		_, err = m.Append([]byte(`[1] [2]`))
		asError(t, err, session.ErrInvalidJSON)
	})
	t.Run("invalid_entry", func(t *testing.T) {
		_, err := m.Append([]byte(`{"id":"x","parentId":null,"timestamp":"t","type":"metadata","key":"k","value":1}`))
		e := asError(t, err, session.ErrInvalidEntry)
		if e.Pointer != "/timestamp" || e.Offset != -1 {
			t.Fatalf("pointer %q offset %d", e.Pointer, e.Offset)
		}
		// Round 2 (docs/contract.md §6.1): an unknown role is an extension message; an empty one is not.
		_, err = session.ParseEntry([]byte(`{"id":"x","parentId":null,"timestamp":1,"type":"message","message":{"role":""}}`))
		if e = asError(t, err, session.ErrInvalidEntry); e.Pointer != "/message/role" {
			t.Fatalf("pointer %q", e.Pointer)
		}
	})
	t.Run("duplicate_id", func(t *testing.T) {
		_, err := m.Append(entry("u-1", ""))
		if e := asError(t, err, session.ErrDuplicateID); e.ID != "u-1" || e.Line != 0 {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("missing_parent", func(t *testing.T) {
		_, err := m.Append(entry("orphan", "nope"))
		if e := asError(t, err, session.ErrMissingParent); e.ChildID != "orphan" || e.ParentID != "nope" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("unknown_leaf", func(t *testing.T) {
		_, err := m.PathTo("nowhere")
		if e := asError(t, err, session.ErrUnknownLeaf); e.ID != "nowhere" {
			t.Fatalf("%+v", e)
		}
		_, err = m.MessagesOnPath("nowhere")
		asError(t, err, session.ErrUnknownLeaf)
	})
	t.Run("cycle", func(t *testing.T) {
		arr := []byte("[" + string(entry("p", "q")) + "," + string(entry("q", "p")) + "]")
		_, err := session.PathTo(arr, "p")
		if e := asError(t, err, session.ErrCycle); e.ID == "" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("corrupt_line", func(t *testing.T) {
		data := string(entry("a", "")) + "\n\nnot json\n"
		_, err := session.RecoverJSONL([]byte(data))
		if e := asError(t, err, session.ErrCorruptLine); e.Line != 3 || e.Reason != "invalid_json" {
			t.Fatalf("%+v", e)
		}
		path := filepath.Join(dir, "corrupt.jsonl")
		os.WriteFile(path, []byte(data), 0o644)
		_, _, err = session.Open(path)
		if e := asError(t, err, session.ErrCorruptLine); e.Line != 3 {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("open_replay", func(t *testing.T) {
		path := filepath.Join(dir, "dup.jsonl")
		os.WriteFile(path, []byte(string(entry("a", ""))+"\n"+string(entry("a", ""))+"\n"), 0o644)
		s, _, err := session.Open(path)
		if s != nil {
			t.Fatal("a store on failure")
		}
		if e := asError(t, err, session.ErrDuplicateID); e.Line != 2 || e.ID != "a" {
			t.Fatalf("%+v", e)
		}
		path = filepath.Join(dir, "orphan.jsonl")
		os.WriteFile(path, []byte(string(entry("b", "a"))+"\n"+string(entry("a", ""))+"\n"), 0o644)
		_, _, err = session.Open(path)
		if e := asError(t, err, session.ErrMissingParent); e.Line != 1 || e.ChildID != "b" || e.ParentID != "a" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("io", func(t *testing.T) {
		_, _, err := session.Open(filepath.Join(dir, "no", "such", "dir.jsonl"))
		if e := asError(t, err, session.ErrIO); e.OSError != 2 || e.Op != "open" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("invalid_argument", func(t *testing.T) {
		// From the library: a C string that is not UTF-8.
		_, err := m.PathTo("\xff\xfe")
		if e := asError(t, err, session.ErrInvalidArgument); e.Argument != "leaf_id" {
			t.Fatalf("%+v", e)
		}
		// From the binding: a NUL byte that a C string would silently cut off.
		_, err = m.Append(append(entry("nul", ""), 0, '!'))
		if e := asError(t, err, session.ErrInvalidArgument); e.Argument != "entry_json" {
			t.Fatalf("%+v", e)
		}
		_, err = m.PathTo("u-1\x00x")
		asError(t, err, session.ErrInvalidArgument)
		_, _, err = session.Open(filepath.Join(dir, "a\x00b"))
		asError(t, err, session.ErrInvalidArgument)
		if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
			t.Fatal("a truncated path was created")
		}
	})
	t.Run("is_and_as", func(t *testing.T) {
		_, err := m.Append(entry("u-1", ""))
		wrapped := fmt.Errorf("saving the turn: %w", err)
		if !errors.Is(wrapped, session.ErrDuplicateID) {
			t.Fatal("errors.Is through %w")
		}
		for _, other := range []*session.Error{session.ErrMissingParent, session.ErrInvalidJSON, session.ErrTainted, session.ErrIO} {
			if errors.Is(err, other) {
				t.Fatalf("duplicate_id Is %s", other.Code)
			}
		}
		var e *session.Error
		if !errors.As(wrapped, &e) || e.ID != "u-1" {
			t.Fatal("errors.As through %w")
		}
		if errors.Is(err, session.ErrClosed) || errors.Is(session.ErrClosed, session.ErrDuplicateID) {
			t.Fatal("ErrClosed is not a library error")
		}
		if !strings.HasPrefix(err.Error(), "session: duplicate_id: ") {
			t.Fatalf("Error() = %q", err.Error())
		}
	})
	// A failed append fails only itself.
	if r, err := m.Append(entry("u-2", "u-1")); err != nil || r.Seq != 1 {
		t.Fatalf("after the failures: %+v, %v", r, err)
	}
}

func TestRecoverJSONL(t *testing.T) {
	r, err := session.RecoverJSONL(nil)
	if err != nil || len(r.Entries) != 0 || len(r.Warnings) != 0 {
		t.Fatalf("empty input: %+v, %v", r, err)
	}
	data := string(entry("a", "")) + "\n \t\r\n" + string(entry("b", "a")) + "\n{\"id\":\x00\x00"
	r, err = session.RecoverJSONL([]byte(data))
	if err != nil || ids(t, r.Entries) != "a,b" {
		t.Fatalf("%+v, %v", r, err)
	}
	if len(r.Warnings) != 1 || r.Warnings[0].Code != "unterminated_tail" || r.Warnings[0].Line != 4 ||
		string(r.Warnings[0].Raw) != `{"code":"unterminated_tail","line":4}` {
		t.Fatalf("warnings %+v", r.Warnings)
	}
}

func TestCloseAndUseAfterClose(t *testing.T) {
	s, _ := mustOpen(t, filepath.Join(t.TempDir(), "c.jsonl"))
	if _, err := s.Append(entry("a", "")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := s.Append(entry("b", "a")); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := s.Entries(); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Entries after Close: %v", err)
	}
	if _, err := s.Read(); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if _, err := s.PathTo("a"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("PathTo after Close: %v", err)
	}
	if _, err := s.MessagesOnPath("a"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("MessagesOnPath after Close: %v", err)
	}
	if s.State() != session.StateTainted {
		t.Fatalf("State after Close: %v", s.State())
	}
	var nilStore *session.Store
	if _, err := nilStore.Entries(); !errors.Is(err, session.ErrClosed) || nilStore.Close() != nil {
		t.Fatalf("nil store: %v", err)
	}
}
