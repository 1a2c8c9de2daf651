package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	session "github.com/libsession/libsession/bindings/go"
)

// docs/contract.md §14 through OpenPostgres, against the throwaway cluster that
// run_tests.sh starts through tests/c/run_pg.sh (SESSION_TEST_PG names it).
func TestPostgresStoreAnswersAsAMemoryStore(t *testing.T) {
	conninfo := os.Getenv("SESSION_TEST_PG")
	if conninfo == "" {
		t.Skip("SESSION_TEST_PG is not set: run through tests/c/run_pg.sh (run_tests.sh does)")
	}
	id := fmt.Sprintf("go-%d", time.Now().UnixNano())
	pg, err := session.OpenPostgres(conninfo, id, session.PgOptions{Durability: session.DurabilityFsync})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	memory, err := session.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer memory.Close()
	for i, e := range chapter {
		a, err := pg.Append(json.RawMessage(e))
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		b, _ := memory.Append(json.RawMessage(e))
		if a != b {
			t.Fatalf("Append(%d): %+v, memory %+v", i, a, b)
		}
	}
	other, err := session.OpenPostgres(conninfo, id, session.PgOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	want, _ := memory.Entries()
	for _, s := range []*session.Store{pg, other} {
		got, err := s.Entries()
		if err != nil || len(got) != len(want) {
			t.Fatalf("Entries: %d, %v", len(got), err)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("entry %d differs", i)
			}
		}
	}
	if _, err := other.Append(json.RawMessage(strings.Replace(chapter[0], "README", "OTHER", 1))); !errors.Is(err, session.ErrDuplicateID) {
		t.Fatalf("a taken id with other bytes: %v", err)
	}
	secret := fmt.Sprintf("Wr0ng-%d", time.Now().UnixNano())
	_, err = session.OpenPostgres("host=/nonexistent-libsession user=u password="+secret, "s", session.PgOptions{})
	if !errors.Is(err, session.ErrIO) || strings.Contains(err.Error(), secret) {
		t.Fatalf("a failed connection: %v", err)
	}
}
