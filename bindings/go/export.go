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

// ExportChange is one kind of change an export made: what ("metadata", "label",
// "branch", "message", "role:custom", "block:TYPE", "thinking", "toolResult.isError",
// "order", "codexItem:TYPE", "compaction", "compaction.summary"), how many, and why.
type ExportChange struct {
	Kind   string `json:"kind"`
	Count  uint64 `json:"count"`
	Reason string `json:"reason"`
}

// ExportReport is what Export wrote: the format, the lines of the file, and what the
// agent's format could not carry as it is (converted) or at all (dropped).
type ExportReport struct {
	Format    string         `json:"format"`
	Entries   uint64         `json:"entries"`
	Converted []ExportChange `json:"converted"`
	Dropped   []ExportChange `json:"dropped"`
	// Redactions is how many secrets were replaced by [REDACTED:<rule>].
	Redactions uint64 `json:"redactions"`
}

// Export writes the session file srcPath as a new file outPath that another agent
// resumes at leaf ("" for the latest leaf): format "pi" (the whole tree), "claude-code"
// or "codex" (what that agent sends for the leaf, as lines it resumes). Every secret
// the default rules find is replaced by [REDACTED:<rule>] (ids never change; the C
// function's option "redact": false keeps them). outPath must not exist; the file is no wider in mode than the source. Fails with
// ErrInvalidArgument (an unknown format), ErrUnknownLeaf, ErrIO (outPath exists, the
// source cannot be read), or as BuildContext fails under that agent's profile.
func Export(format, srcPath, outPath, leaf string) (*ExportReport, error) {
	cf, err := cStringFrom(format, "format")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cf))
	cs, err := cStringFrom(srcPath, "src_path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cs))
	co, err := cStringFrom(outPath, "out_path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(co))
	var options *C.char
	if leaf != "" {
		b, _ := json.Marshal(struct {
			Leaf string `json:"leaf"`
		}{leaf})
		if options, err = cString(b, "options_json"); err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(options))
	}
	text, err := call(func(out **C.char) C.SessionStatus {
		return C.session_export(cf, cs, co, options, out)
	})
	if err != nil {
		return nil, err
	}
	var v ExportReport
	return &v, decode(text, &v)
}
