package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

// fakeGitLabToken is built at run time, so that no source file holds a string that
// looks like a token.
func fakeGitLabToken() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	state := uint32(4242)
	var b strings.Builder
	b.WriteString("glpat-")
	for i := 0; i < 20; i++ {
		state = state*1103515245 + 12345
		b.WriteByte(alnum[(state>>16)%62])
	}
	return b.String()
}

func TestSecretsFindsAndRedactRemovesAToken(t *testing.T) {
	dir := t.TempDir()
	token := fakeGitLabToken()
	line := func(text string) string {
		return `{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"` + text + `"}}` + "\n"
	}
	src := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(src, []byte(line("token "+token)), 0o600); err != nil {
		t.Fatal(err)
	}
	found, err := session.Secrets(dir, session.SecretsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Findings) != 1 || found.Findings[0].Rule != "gitlab-token" || found.Findings[0].Path != "s.jsonl" ||
		*found.Findings[0].EntryID != "u-1" || *found.Findings[0].Pointer != "/message/content" ||
		len(found.Findings[0].Fingerprint) != 12 || found.Sessions != 1 {
		t.Fatalf("%+v", found)
	}
	dst := filepath.Join(dir, "out.jsonl")
	done, err := session.Redact(src, dst, session.SecretsOptions{})
	if err != nil || done.Redactions != 1 {
		t.Fatalf("%+v %v", done, err)
	}
	got, _ := os.ReadFile(dst)
	if string(got) != line("token [REDACTED:gitlab-token]") {
		t.Fatalf("%s", got)
	}
	allowed, err := session.Secrets(src, session.SecretsOptions{Allow: []string{token}})
	if err != nil || len(allowed.Findings) != 0 {
		t.Fatalf("allowed: %+v %v", allowed, err)
	}
	if _, err := session.Redact(src, "", session.SecretsOptions{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(src)
	if string(again) != string(got) {
		t.Fatalf("in place: %s", again)
	}
	_, err = session.Secrets(src, session.SecretsOptions{ExtraRules: []session.SecretRule{{Name: "x", Pattern: "("}}})
	asError(t, err, session.ErrInvalidArgument)
}
