package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	session "github.com/libsession/libsession/bindings/go"
)

func Example() {
	dir, _ := os.MkdirTemp("", "session-example")
	defer os.RemoveAll(dir)

	store, report, err := session.Open(filepath.Join(dir, "s.jsonl"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	fmt.Println("state:", report.State)

	for _, e := range []string{
		`{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi"}}`,
		`{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}`,
		`{"id":"m-1","parentId":"a-1","timestamp":3,"type":"metadata","key":"cwd","value":"/tmp"}`,
	} {
		r, err := store.Append([]byte(e))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("appended", r.ID, "seq", r.Seq)
	}

	msgs, _ := store.MessagesOnPath("m-1")
	for _, m := range msgs {
		fmt.Println(string(m))
	}

	_, err = store.Append([]byte(`{"id":"x","parentId":"nope","timestamp":4,"type":"metadata","key":"k","value":1}`))
	var e *session.Error
	if errors.Is(err, session.ErrMissingParent) && errors.As(err, &e) {
		fmt.Println(e.Code, e.ChildID, e.ParentID)
	}
	// Output:
	// state: ready
	// appended u-1 seq 0
	// appended a-1 seq 1
	// appended m-1 seq 2
	// {"role":"user","content":"hi"}
	// {"role":"assistant","content":[{"type":"text","text":"hello"}]}
	// missing_parent x nope
}

func ExampleRecoverJSONL() {
	data := []byte(`{"id":"u-1","parentId":null,"timestamp":1,"type":"metadata","key":"k","value":1}` +
		"\n" + `{"id":"u-2","par`) // a torn last line
	r, err := session.RecoverJSONL(data)
	fmt.Println(len(r.Entries), r.Warnings[0].Code, r.Warnings[0].Line, err)
	// Output: 1 unterminated_tail 2 <nil>
}

func ExampleStore_BuildContext() {
	store, _, err := session.OpenWith("../../examples/tiny-pi-compacted.jsonl", session.Options{ReadOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	// A host's tokenizer would go here; this one counts 10 tokens per message.
	perMessage := func(json.RawMessage) (float64, error) { return 10, nil }
	c, err := store.BuildContext("u-3", session.ContextOptions{
		Budget: &session.Budget{MaxTokens: 40},
	}, perMessage)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("compaction:", c.Compaction.ID, "keeps from", *c.Compaction.FirstKeptEntryID)
	fmt.Println("send", len(c.Messages), "messages:", c.KeptEntryIDs)
	fmt.Println(c.Budget.Reason, "used", c.Budget.Used, "of", c.Budget.Available)
	fmt.Println("next compaction could keep from", *c.Budget.SuggestedFirstKeptEntryID)
	// Output:
	// compaction: c-1 keeps from u-2
	// send 2 messages: [u-3]
	// trimmed used 20 of 40
	// next compaction could keep from u-3
}
