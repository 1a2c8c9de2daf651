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

// SearchQuery is a query for Search. Query is required (its whitespace-separated words
// must all occur); Limit is 1..1000 (0 means the default, 20); Roles keeps only hits of
// those roles ("user", "assistant", "toolResult", an extension role, "compaction");
// LatestPathOnly keeps only entries on the path to each session's latest entry.
type SearchQuery struct {
	Query          string   `json:"query"`
	Limit          uint64   `json:"limit,omitempty"`
	Roles          []string `json:"roles,omitempty"`
	LatestPathOnly bool     `json:"latestPathOnly,omitempty"`
}

// SearchHit is one match.
type SearchHit struct {
	Path         string      `json:"path"` // the file's name relative to dir
	EntryID      string      `json:"entryId"`
	Seq          uint64      `json:"seq"`
	Role         string      `json:"role"`
	Timestamp    json.Number `json:"timestamp"` // as written
	Snippet      string      `json:"snippet"`
	Score        float64     `json:"score"` // higher is better
	OnLatestPath bool        `json:"onLatestPath"`
}

// SearchError is a file, or a line of one, that could not be searched.
type SearchError struct {
	Path    string  `json:"path"`
	Line    *uint64 `json:"line"` // nil for the whole file
	Reason  string  `json:"reason"`
	Message string  `json:"message"`
}

// SearchResult is what Search found, best first.
type SearchResult struct {
	Hits      []SearchHit   `json:"hits"`
	Sessions  uint64        `json:"sessions"`
	Entries   uint64        `json:"entries"`
	Errors    []SearchError `json:"errors"`
	BytesRead uint64        `json:"bytesRead"` // of session files, past what the index held
	Index     string        `json:"index"`     // "sidecar", or "temporary" when the sidecar could not be used
}

// Search finds query in the *.jsonl sessions directly in dir, through the index
// dir/.session-search.db, which it brings up to date first (reading only what was
// appended since the last search); where that index cannot be used (a folder the
// caller may only read) it searches with a temporary one and says so in Index. Fails
// with ErrInvalidArgument (a bad query, or one over 1 MiB or 256 different words) or
// ErrIO (dir cannot be read).
func Search(dir string, query SearchQuery) (*SearchResult, error) {
	cd, err := cStringFrom(dir, "dir")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cd))
	if query.Limit == 0 {
		query.Limit = 20
	}
	b, _ := json.Marshal(query)
	cq, err := cString(b, "query_json")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cq))
	text, err := call(func(out **C.char) C.SessionStatus { return C.session_search(cd, cq, out) })
	if err != nil {
		return nil, err
	}
	var v SearchResult
	return &v, decode(text, &v)
}
