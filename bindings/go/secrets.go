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

// SecretRule is a user's rule for Secrets and Redact: Pattern is Rust regex syntax; if
// it has a group named secret, only that group is the secret. Name is 1 to 64 letters,
// digits, '-', '_' or '.'.
type SecretRule struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
}

// SecretsOptions are the options of Secrets and Redact. Rules, when not nil, replaces
// the built-in rules; ExtraRules adds to them; Allow lists values never reported.
// InPlace is Redact's: with an empty dst, rewrite src under the writer's lock.
type SecretsOptions struct {
	Rules      []SecretRule `json:"rules,omitempty"`
	ExtraRules []SecretRule `json:"extraRules,omitempty"`
	Allow      []string     `json:"allow,omitempty"`
	InPlace    bool         `json:"inPlace,omitempty"`
}

// SecretFinding is one secret found: where and what kind, never its value.
type SecretFinding struct {
	Path        string  `json:"path"`    // the file as given, or its name in the folder
	EntryID     *string `json:"entryId"` // nil for a line that is not an entry
	Pointer     *string `json:"pointer"` // the string's JSON Pointer; nil for a line that is not JSON
	Rule        string  `json:"rule"`
	Fingerprint string  `json:"fingerprint"` // the first 12 hex digits of the secret's SHA-256
}

// SecretsResult is what Secrets found.
type SecretsResult struct {
	Findings []SecretFinding `json:"findings"`
	Sessions uint64          `json:"sessions"`
}

// RedactResult is what Redact did.
type RedactResult struct {
	Redactions uint64          `json:"redactions"`
	Findings   []SecretFinding `json:"findings"`
}

func secretsOptions(options SecretsOptions) (*C.char, error) {
	b, _ := json.Marshal(options)
	return cString(b, "options_json")
}

// Secrets finds API keys, tokens, private keys and passwords in the session file path
// or in the *.jsonl files of the folder path. Fails with ErrInvalidArgument (an invalid
// rule, named) or ErrIO.
func Secrets(path string, options SecretsOptions) (*SecretsResult, error) {
	cp, err := cStringFrom(path, "path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cp))
	co, err := secretsOptions(options)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(co))
	text, err := call(func(out **C.char) C.SessionStatus { return C.session_secrets(cp, co, out) })
	if err != nil {
		return nil, err
	}
	var v SecretsResult
	return &v, decode(text, &v)
}

// Redact writes src with each secret replaced by [REDACTED:<rule>] to dst, a new file,
// every other byte unchanged; with dst "" and options.InPlace it rewrites src under the
// writer's lock (ErrLocked while a writer holds it). Fails with ErrInvalidArgument or
// ErrIO (dst exists, a file cannot be read or written).
func Redact(src, dst string, options SecretsOptions) (*RedactResult, error) {
	cs, err := cStringFrom(src, "src_path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cs))
	var cd *C.char
	if dst != "" {
		if cd, err = cStringFrom(dst, "dst_path"); err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(cd))
	}
	co, err := secretsOptions(options)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(co))
	text, err := call(func(out **C.char) C.SessionStatus { return C.session_redact(cs, cd, co, out) })
	if err != nil {
		return nil, err
	}
	var v RedactResult
	return &v, decode(text, &v)
}
