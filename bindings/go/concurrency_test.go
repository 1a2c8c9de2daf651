package session_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

// 8 goroutines × 200 appends on one file store, with readers alongside: no append is
// lost, every seq is unique and equals the entry's line in the file.
func TestConcurrentAppends(t *testing.T) {
	const workers, each = 8, 200
	path := filepath.Join(t.TempDir(), "concurrent.jsonl")
	s, _ := mustOpen(t, path)

	receipts := make([][]session.Receipt, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers+2)
	stop := make(chan struct{})
	var reads atomic.Int64
	for r := 0; r < 2; r++ { // readers while the appends run
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				entries, err := s.Entries()
				if err != nil {
					errs <- fmt.Errorf("Entries: %w", err)
					return
				}
				if len(entries) > 0 {
					var v struct {
						ID string `json:"id"`
					}
					json.Unmarshal(entries[len(entries)-1], &v)
					if _, err := s.PathTo(v.ID); err != nil {
						errs <- fmt.Errorf("PathTo(%s): %w", v.ID, err)
						return
					}
				}
				reads.Add(1)
			}
		}()
	}
	var writers sync.WaitGroup
	for w := 0; w < workers; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			parent := ""
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				r, err := s.Append(entry(id, parent)) // each goroutine grows its own branch
				if err != nil {
					errs <- fmt.Errorf("Append(%s): %w", id, err)
					return
				}
				if r.ID != id {
					errs <- fmt.Errorf("receipt id %q for %q", r.ID, id)
					return
				}
				receipts[w] = append(receipts[w], r)
				parent = id
			}
		}(w)
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The file, line by line.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d: %v", len(lines)+1, err)
		}
		lines = append(lines, v.ID)
	}
	if len(lines) != workers*each {
		t.Fatalf("%d lines, want %d (appends lost)", len(lines), workers*each)
	}
	seen := make(map[uint64]string)
	for w, list := range receipts {
		if len(list) != each {
			t.Fatalf("worker %d: %d receipts", w, len(list))
		}
		for i, r := range list {
			if other, dup := seen[r.Seq]; dup {
				t.Fatalf("seq %d given to %s and %s", r.Seq, other, r.ID)
			}
			seen[r.Seq] = r.ID
			if r.Seq >= uint64(len(lines)) || lines[r.Seq] != r.ID {
				t.Fatalf("seq %d of %s does not match the file's line order", r.Seq, r.ID)
			}
			if i > 0 && r.Seq <= list[i-1].Seq {
				t.Fatalf("worker %d: seq went back", w)
			}
		}
	}
	entries, err := s.Entries()
	if err != nil || len(entries) != workers*each {
		t.Fatalf("Entries: %d, %v", len(entries), err)
	}
	for i, e := range entries {
		var v struct {
			ID string `json:"id"`
		}
		json.Unmarshal(e, &v)
		if v.ID != lines[i] {
			t.Fatalf("Entries()[%d] = %s, file line %s", i, v.ID, lines[i])
		}
	}
	p, err := s.PathTo(fmt.Sprintf("w3-%d", each-1))
	if err != nil || len(p) != each {
		t.Fatalf("a worker's branch: %d entries, %v", len(p), err)
	}
	t.Logf("%d appends, %d concurrent reads", workers*each, reads.Load())
}

// Close while goroutines are appending and reading: it waits for the calls in flight,
// and every later call fails with ErrClosed instead of touching a freed store.
func TestCloseDuringUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "closing.jsonl")
	s, _ := mustOpen(t, path)
	var committed atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{}, 8)
	bad := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var once sync.Once
			defer once.Do(func() { started <- struct{}{} })
			last := ""
			for i := 0; ; i++ {
				var err error
				switch {
				case g%2 == 0 && i < 100: // appends (a bounded number: reads stay cheap)
					id := fmt.Sprintf("g%d-%d", g, i)
					if _, err = s.Append(entry(id, last)); err == nil {
						committed.Add(1)
						last = id
					}
				case g%2 == 0:
					_, err = s.PathTo(last)
				default:
					_, err = s.Entries()
				}
				if i == 10 {
					once.Do(func() { started <- struct{}{} })
				}
				if errors.Is(err, session.ErrClosed) {
					return
				}
				if err != nil {
					bad <- err
					return
				}
			}
		}(g)
	}
	for i := 0; i < 8; i++ {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Fatalf("a call failed with something other than ErrClosed: %v", err)
	}
	// Every append that returned success is in the file.
	r, report := mustOpen(t, path)
	entries, err := r.Entries()
	if err != nil || report.State != session.StateReady || int64(len(entries)) != committed.Load() {
		t.Fatalf("reopened: %d entries, %d committed, %+v, %v", len(entries), committed.Load(), report, err)
	}
}
