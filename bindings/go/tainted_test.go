//go:build linux

package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

const halfWriteEnv = "SESSION_GO_TEST_HALF_WRITE_FILE"

// halfWriteRoom is how many bytes of the next line the kernel lets through.
const halfWriteRoom = 10

// A real half write: a child process lowers RLIMIT_FSIZE so that the kernel accepts only
// the first bytes of a line (write returns a short count, then EFBIG) and checks the
// store taints; the parent then reopens the file and finds it needs repair.
func TestTaintedByRealHalfWrite(t *testing.T) {
	if path := os.Getenv(halfWriteEnv); path != "" {
		halfWriteChild(t, path)
		return
	}

	path := filepath.Join(t.TempDir(), "half.jsonl")
	first := chapter[0] + "\n"
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTaintedByRealHalfWrite$", "-test.v")
	cmd.Env = append(os.Environ(), halfWriteEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("HALF-WRITE-CHILD-OK")) {
		t.Fatalf("child: %v\n%s", err, out)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != len(first)+halfWriteRoom || !strings.HasPrefix(string(data), first) {
		t.Fatalf("file after the half write (%d bytes): %q", len(data), data)
	}
	if !strings.HasPrefix(chapter[1], string(data[len(first):])) {
		t.Fatalf("the half line is not a prefix of the entry: %q", data[len(first):])
	}

	// Reopening re-checks the disk: the committed prefix, and a torn tail.
	s, report, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if report.State != session.StateNeedsRepair || len(report.Warnings) != 1 ||
		report.Warnings[0].Code != "unterminated_tail" || report.Warnings[0].Line != 2 {
		t.Fatalf("reopened: %+v", report)
	}
	entries, err := s.Entries()
	if err != nil || ids(t, entries) != "u-1" {
		t.Fatalf("committed prefix: %s, %v", entries, err)
	}
	_, err = s.Append([]byte(chapter[4]))
	asError(t, err, session.ErrNeedsRepair)
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("a needs_repair store wrote to the file")
	}
}

func halfWriteChild(t *testing.T, path string) {
	s, report, err := session.Open(path)
	if err != nil || report.State != session.StateReady {
		t.Fatalf("open: %+v, %v", report, err)
	}
	defer s.Close()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	// The kernel sends SIGXFSZ when a write crosses the limit; ignored, write fails
	// with EFBIG instead, after a short write of what fitted.
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limit := syscall.Rlimit{Cur: uint64(info.Size()) + halfWriteRoom, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}

	_, err = s.Append([]byte(chapter[1]))
	ioErr := asError(t, err, session.ErrIO)
	if ioErr.OSError != int(syscall.EFBIG) || ioErr.Op != "write" {
		t.Fatalf("first failing append: %+v", ioErr)
	}
	if s.State() != session.StateTainted {
		t.Fatalf("state after the failed write: %v", s.State())
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(ioErr.Raw, &env); err != nil {
		t.Fatal(err)
	}

	// Raise the limit again: nothing may be written anyway.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	checkTainted := func(what string, err error) {
		t.Helper()
		e := asError(t, err, session.ErrTainted)
		if !bytes.Equal(e.Cause, env.Error) {
			t.Fatalf("%s: cause %s, want the original %s", what, e.Cause, env.Error)
		}
		if c := e.CauseError(); c == nil || !errors.Is(c, session.ErrIO) || c.OSError != int(syscall.EFBIG) {
			t.Fatalf("%s: CauseError() = %+v", what, c)
		}
	}
	_, err = s.Append([]byte(chapter[4]))
	checkTainted("Append", err)
	_, err = s.Append([]byte(chapter[1]))
	checkTainted("Append again", err)
	_, err = s.Entries()
	checkTainted("Entries", err)
	_, err = s.Read()
	checkTainted("Read", err)
	_, err = s.PathTo("u-1")
	checkTainted("PathTo", err)
	_, err = s.MessagesOnPath("u-1")
	checkTainted("MessagesOnPath", err)
	if s.State() != session.StateTainted {
		t.Fatalf("state: %v", s.State())
	}
	if !t.Failed() {
		os.Stdout.WriteString("HALF-WRITE-CHILD-OK\n")
	}
}
