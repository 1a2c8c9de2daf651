package session

/*
#include <stdlib.h>
#include <session.h>
*/
import "C"

import (
	"encoding/json"
	"unsafe"
)

// Node describes one entry in the tree without its message body. Members that do not
// apply to the entry's type keep their zero value.
type Node struct {
	ID       string  `json:"id"`
	ParentID *string `json:"parentId"` // nil for a root
	Seq      uint64  `json:"seq"`      // 0-based commit position
	Depth    uint64  `json:"depth"`    // 0 for a root
	// Timestamp as written (a JSON number).
	Timestamp json.Number `json:"timestamp"`
	Type      string      `json:"type"` // "message", "metadata" or "compaction"
	Role      string      `json:"role,omitempty"`
	// ToolCalls counts an assistant message's tool calls.
	ToolCalls  uint64 `json:"toolCalls,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"` // a toolResult's
	Key        string `json:"key,omitempty"`        // a metadata entry's
	// FirstKeptEntryID is a compaction's cut; nil for a null cut and for other entries.
	FirstKeptEntryID *string `json:"firstKeptEntryId,omitempty"`
	ChildCount       uint64  `json:"childCount"`
	Label            string  `json:"label,omitempty"`   // the entry's current label
	Preview          string  `json:"preview,omitempty"` // TreeOptions.PreviewChars > 0
	OnPath           bool    `json:"onPath,omitempty"`  // on TreeOptions.Leaf's path
}

// Leaves is every entry without children, in commit order, and the latest of them.
type Leaves struct {
	Leaves []Node `json:"leaves"`
	// LatestBySeq is the last committed entry; "" when the store is empty.
	LatestBySeq string `json:"latestBySeq"`
	// LatestByTimestamp is the leaf with the greatest timestamp (a tie goes to the
	// higher seq); "" when the store is empty.
	LatestByTimestamp string `json:"latestByTimestamp"`
}

// TreeOptions selects a page of Tree. The zero value is every node, without previews.
type TreeOptions struct {
	// AfterSeq starts the page after the node with this seq (a previous page's
	// NextAfterSeq); nil starts at the first node.
	AfterSeq *uint64 `json:"afterSeq,omitempty"`
	// Limit is the most nodes the page holds; nil for no limit.
	Limit *uint64 `json:"limit,omitempty"`
	// Leaf flags the nodes on its path with OnPath ("" for none).
	Leaf string `json:"leaf,omitempty"`
	// PreviewChars > 0 adds a preview of that many characters of each message's text.
	PreviewChars uint64 `json:"previewChars,omitempty"`
}

// TreePage is one page of the tree in commit order.
type TreePage struct {
	Nodes []Node `json:"nodes"`
	Count uint64 `json:"count"` // entries in the store
	// NextAfterSeq is the AfterSeq of the next page; nil on the last page.
	NextAfterSeq *uint64 `json:"nextAfterSeq"`
}

// Label is the current label of one entry.
type Label struct {
	TargetID string `json:"targetId"`
	Label    string `json:"label"`
	EntryID  string `json:"entryId"` // the session.label metadata entry that set it
	Seq      uint64 `json:"seq"`     // that entry's seq
}

// Children returns the direct children of id, in commit order. ErrUnknownLeaf (ID)
// when no entry has that id.
func (s *Store) Children(id string) ([]Node, error) {
	c, err := cStringFrom(id, "id")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(c))
	var nodes []Node
	return nodes, s.decodeCall(&nodes, func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_children(p, c, out)
	})
}

// Roots returns the entries without a parent, in commit order.
func (s *Store) Roots() ([]Node, error) {
	var nodes []Node
	return nodes, s.decodeCall(&nodes, func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_roots(p, out)
	})
}

// Leaves returns the entries without children, in commit order, and the latest of them.
func (s *Store) Leaves() (Leaves, error) {
	var l Leaves
	return l, s.decodeCall(&l, func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_leaves(p, out)
	})
}

// LatestLeaf returns the node of the last committed entry ("resume the latest"), or
// nil when the store is empty.
func (s *Store) LatestLeaf() (*Node, error) {
	var n *Node
	return n, s.decodeCall(&n, func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_latest_leaf(p, out)
	})
}

// Tree returns a page of nodes in commit order. Its cost grows with the page and the
// leaf's depth, not the store. ErrUnknownLeaf when options.Leaf names no entry.
func (s *Store) Tree(options TreeOptions) (TreePage, error) {
	b, _ := json.Marshal(options)
	co, err := cString(b, "options_json")
	if err != nil {
		return TreePage{}, err
	}
	defer C.free(unsafe.Pointer(co))
	var page TreePage
	return page, s.decodeCall(&page, func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_tree(p, co, out)
	})
}

// Labels returns each labelled entry once, ordered by the entry's seq; a cleared label
// is absent.
func (s *Store) Labels() ([]Label, error) {
	var labels []Label
	return labels, s.decodeCall(&labels, func(p *C.SessionStore, out **C.char) C.SessionStatus {
		return C.session_store_labels(p, out)
	})
}

// decodeCall runs one store call and decodes its JSON into v.
func (s *Store) decodeCall(v interface{}, f func(p *C.SessionStore, out **C.char) C.SessionStatus) error {
	text, err := s.do(f)
	if err != nil {
		return err
	}
	return decode(text, v)
}

// ListSort orders ListSessions' records.
type ListSort string

const (
	SortModified ListSort = "modifiedMs" // newest first (the default)
	SortPath     ListSort = "path"       // ascending path
)

// ListOptions for ListSessions. The zero value lists the folder itself, newest first.
type ListOptions struct {
	Recursive bool     `json:"recursive,omitempty"` // descend into subfolders (never through a link)
	Limit     *uint64  `json:"limit,omitempty"`     // at most this many records; nil for all
	Sort      ListSort `json:"sort,omitempty"`
}

// SessionInfo is one session file as ListSessions saw it from its head and its last
// committed line. Facts it could not learn are nil.
type SessionInfo struct {
	Path       string `json:"path"` // dir joined with the file's name
	Bytes      uint64 `json:"bytes"`
	ModifiedMs *int64 `json:"modifiedMs"`
	// State is of the tail: StateReady or StateNeedsRepair; nil when the file has an
	// Error.
	State *State `json:"state"`
	// FirstUserText is a preview of the first user message's text in the head.
	FirstUserText *string `json:"firstUserText"`
	LatestLeafID  *string `json:"latestLeafId"`
	// LatestTimestamp is the last committed entry's timestamp, as written.
	LatestTimestamp *json.Number `json:"latestTimestamp"`
	// Entries is known only when the file was small enough to read whole.
	Entries *uint64 `json:"entries"`
	// Error says why the file is listed without its facts (code "io", "corrupt_line",
	// …); nil for a readable session.
	Error *ListError `json:"error"`
}

// ListError is why ListSessions could not read a file.
type ListError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ListSessions lists the session files (*.jsonl) in dir, reading each one's head and
// last committed line only; damage in the middle of a file is Open's (or verify's)
// business. A file that cannot be read is listed with Error, never skipped. Fails
// with ErrInvalidArgument (bad options) or ErrIO (dir cannot be read).
func ListSessions(dir string, options ListOptions) ([]SessionInfo, error) {
	cd, err := cStringFrom(dir, "dir")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cd))
	b, _ := json.Marshal(options)
	co, _ := cString(b, "options_json")
	defer C.free(unsafe.Pointer(co))
	text, err := call(func(out **C.char) C.SessionStatus { return C.session_list_sessions(cd, co, out) })
	if err != nil {
		return nil, err
	}
	var v struct {
		Sessions []SessionInfo `json:"sessions"`
	}
	return v.Sessions, decode(text, &v)
}
