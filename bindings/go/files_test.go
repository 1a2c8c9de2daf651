package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

// One writer per file: a second writer gets ErrLocked; a read-only open works beside it.
func TestLockAndReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.jsonl")
	w, _ := mustOpen(t, path)
	if _, err := w.Append(entry("a", "")); err != nil {
		t.Fatal(err)
	}
	_, _, err := session.Open(path)
	if e := asError(t, err, session.ErrLocked); e.Path == "" {
		t.Fatalf("%+v", e)
	}

	r, report, err := session.OpenWith(path, session.Options{ReadOnly: true})
	if err != nil || report.State != session.StateReady {
		t.Fatalf("read-only open beside a writer: %+v, %v", report, err)
	}
	defer r.Close()
	if entries, err := r.Entries(); err != nil || ids(t, entries) != "a" {
		t.Fatalf("read-only entries: %v, %v", entries, err)
	}
	_, err = r.Append(entry("b", "a"))
	asError(t, err, session.ErrReadOnly)

	// Closing the writer releases the lock.
	w.Close()
	w2, _ := mustOpen(t, path)
	if r, err := w2.Append(entry("b", "a")); err != nil || r.Seq != 1 {
		t.Fatalf("append after reopening: %+v, %v (seq counts the entries already in the file)", r, err)
	}

	_, _, err = session.OpenWith(filepath.Join(t.TempDir(), "missing.jsonl"), session.Options{ReadOnly: true})
	asError(t, err, session.ErrIO) // read-only never creates the file
}

func TestOptions(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []session.Durability{session.DurabilityNone, session.DurabilityFsync, session.DurabilityFsyncBatch} {
		s, report, err := session.OpenWith(filepath.Join(dir, string(d)+".jsonl"), session.Options{Durability: d})
		if err != nil || report.State != session.StateReady {
			t.Fatalf("durability %s: %v", d, err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				if _, err := s.Append(entry(string(rune('a'+g)), "")); err != nil {
					t.Errorf("durability %s: %v", d, err)
				}
			}(g)
		}
		wg.Wait()
		s.Close()
	}
	_, _, err := session.OpenWith(filepath.Join(dir, "bad.jsonl"), session.Options{Durability: "sometimes"})
	if e := asError(t, err, session.ErrInvalidArgument); e.Argument != "options_json" {
		t.Fatalf("%+v", e)
	}
	// NoLock: two writers can open (the caller takes the responsibility).
	p := filepath.Join(dir, "nolock.jsonl")
	a, _, err := session.OpenWith(p, session.Options{NoLock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _, err := session.OpenWith(p, session.Options{NoLock: true})
	if err != nil {
		t.Fatalf("second NoLock writer: %v", err)
	}
	defer b.Close()
}

// A writer whose file grew under it refuses to append, and stays tainted.
func TestFileChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "changed.jsonl")
	s, _ := mustOpen(t, path)
	if _, err := s.Append(entry("a", "")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	foreign := string(entry("x", "")) + "\n"
	f.WriteString(foreign) // another writer that ignores the lock
	f.Close()

	before, _ := os.ReadFile(path)
	_, err = s.Append(entry("b", "a"))
	e := asError(t, err, session.ErrFileChanged)
	if e.Reason != "size_changed" || e.ActualSize != e.ExpectedSize+int64(len(foreign)) {
		t.Fatalf("%+v", e)
	}
	if s.State() != session.StateTainted {
		t.Fatalf("state %v", s.State())
	}
	_, err = s.Append(entry("c", "a"))
	if te := asError(t, err, session.ErrTainted); !errors.Is(te.CauseError(), session.ErrFileChanged) {
		t.Fatalf("cause %s", te.Cause)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a changed file was written to")
	}
}

// Repair moves an unterminated tail to a backup; the file then opens ready.
func TestRepair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "torn.jsonl")
	tail := `{"id":"b","parentId":"a","time`
	os.WriteFile(path, []byte(string(entry("a", ""))+"\n"+tail), 0o644)

	r, err := session.Repair(path)
	if err != nil || r.TruncatedBytes != uint64(len(tail)) || r.Entries != 1 || r.Backup == "" {
		t.Fatalf("Repair = %+v, %v", r, err)
	}
	if b, err := os.ReadFile(r.Backup); err != nil || string(b) != tail {
		t.Fatalf("backup %q: %q, %v", r.Backup, b, err)
	}
	s, report := mustOpen(t, path)
	if report.State != session.StateReady {
		t.Fatalf("after repair: %+v", report)
	}
	// A second repair changes nothing; a repair while a writer holds the file is refused.
	s.Close()
	if r, err := session.Repair(path); err != nil || r.TruncatedBytes != 0 || r.Backup != "" {
		t.Fatalf("second Repair = %+v, %v", r, err)
	}
	s, _ = mustOpen(t, path)
	_, err = session.Repair(path)
	asError(t, err, session.ErrLocked)

	bad := filepath.Join(t.TempDir(), "corrupt.jsonl")
	os.WriteFile(bad, []byte("nope\n"+tail), 0o644)
	_, err = session.Repair(bad)
	asError(t, err, session.ErrCorruptLine)
	if b, _ := os.ReadFile(bad); string(b) != "nope\n"+tail {
		t.Fatal("a refused repair changed the file")
	}
}

// Salvage loads every good line of a damaged file and says what it skipped.
func TestSalvage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged.jsonl")
	lines := []string{string(entry("a", "")), "garbage", string(entry("a", "")), string(entry("o", "gone")), string(entry("b", "a"))}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	_, _, err := session.Open(path)
	asError(t, err, session.ErrCorruptLine)

	s, report, err := session.OpenWith(path, session.Options{Salvage: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if report.Complete || len(report.Diagnostics) != 3 {
		t.Fatalf("salvage report %+v", report)
	}
	d := report.Diagnostics
	if d[0].Line != 2 || d[0].Code != "corrupt_line" || d[1].Line != 3 || d[1].Code != "duplicate_id" ||
		d[2].Line != 4 || d[2].Code != "orphan" || d[2].ID != "o" || d[2].ParentID != "gone" {
		t.Fatalf("diagnostics %+v", d)
	}
	entries, err := s.Entries()
	if err != nil || ids(t, entries) != "a,o,b" {
		t.Fatalf("salvaged entries %v, %v", entries, err)
	}
	if p, err := s.PathTo("b"); err != nil || ids(t, p) != "a,b" {
		t.Fatalf("path through good entries: %v, %v", p, err)
	}
	_, err = s.PathTo("o")
	asError(t, err, session.ErrMissingParent)
	_, err = s.Append(entry("c", "a"))
	asError(t, err, session.ErrReadOnly)
	snap, err := s.Read()
	if err != nil || snap.Complete || len(snap.Diagnostics) != 3 {
		t.Fatalf("Read on salvage: %+v, %v", snap, err)
	}

	// A clean file opened normally is complete.
	clean, report := mustOpen(t, filepath.Join(t.TempDir(), "clean.jsonl"))
	snap, _ = clean.Read()
	if !report.Complete || !snap.Complete || report.Diagnostics != nil {
		t.Fatalf("a normal open: %+v / %+v", report, snap)
	}
}

// Export writes a file another agent resumes, with its report; an existing output and an
// unknown leaf are refused.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "s.jsonl")
	lines := `{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi"}}
{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}
{"id":"m-1","parentId":"a-1","timestamp":3,"type":"metadata","key":"cwd","value":"/w"}
`
	if err := os.WriteFile(src, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "claude.jsonl")
	report, err := session.Export("claude-code", src, out, "")
	if err != nil {
		t.Fatal(err)
	}
	if report.Format != "claude-code" || report.Entries != 2 || len(report.Dropped) != 1 ||
		report.Dropped[0].Kind != "metadata" || report.Dropped[0].Count != 1 {
		t.Fatalf("report %+v", report)
	}
	text, _ := os.ReadFile(out)
	if !strings.Contains(string(text), `"uuid":"a-1"`) {
		t.Fatalf("%s", text)
	}
	if _, err := session.Export("claude-code", src, out, ""); !errors.Is(err, session.ErrIO) {
		t.Fatalf("an existing output: %v", err)
	}
	if _, err := session.Export("codex", src, filepath.Join(dir, "x.jsonl"), "nope"); !errors.Is(err, session.ErrUnknownLeaf) {
		t.Fatalf("an unknown leaf: %v", err)
	}
}
