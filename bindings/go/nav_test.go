package session_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/libsession/libsession/bindings/go"
)

// memoryWith appends lines to a new memory store.
func memoryWith(t *testing.T, lines []string) *session.Store {
	t.Helper()
	s, err := session.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, line := range lines {
		if _, err := s.Append([]byte(line)); err != nil {
			t.Fatalf("append %s: %v", line, err)
		}
	}
	return s
}

func nodeIDs(nodes []session.Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return strings.Join(out, ",")
}

func TestNavigationOfTheChapterTree(t *testing.T) {
	store := memoryWith(t, chapter)
	kids, err := store.Children("u-1")
	if err != nil || nodeIDs(kids) != "a-read,a-alt" {
		t.Fatalf("children(u-1) = %s, %v", nodeIDs(kids), err)
	}
	r := kids[0]
	if r.ParentID == nil || *r.ParentID != "u-1" || r.Seq != 1 || r.Depth != 1 || r.Type != "message" ||
		r.Role != "assistant" || r.ToolCalls != 1 || r.ChildCount != 1 || r.Timestamp != "1733000001000" {
		t.Fatalf("node a-read %+v", r)
	}
	roots, err := store.Roots()
	if err != nil || nodeIDs(roots) != "u-1" || roots[0].ParentID != nil || roots[0].ChildCount != 2 {
		t.Fatalf("roots %+v %v", roots, err)
	}
	leaves, err := store.Leaves()
	if err != nil || nodeIDs(leaves.Leaves) != "a-alt,meta-cwd" || leaves.LatestBySeq != "meta-cwd" ||
		leaves.LatestByTimestamp != "meta-cwd" {
		t.Fatalf("leaves %+v %v", leaves, err)
	}
	latest, err := store.LatestLeaf()
	if err != nil || latest == nil || latest.ID != "meta-cwd" || latest.Key != "cwd" || latest.Depth != 4 {
		t.Fatalf("latest leaf %+v %v", latest, err)
	}
	_, err = store.Children("nope")
	if e := asError(t, err, session.ErrUnknownLeaf); e.ID != "nope" {
		t.Fatalf("unknown id: %s", e.Raw)
	}
}

func TestTreePagesInCommitOrder(t *testing.T) {
	store := memoryWith(t, chapter)
	two := uint64(2)
	var got []string
	opts := session.TreeOptions{Limit: &two, Leaf: "a-alt", PreviewChars: 4}
	for pages := 0; ; pages++ {
		page, err := store.Tree(opts)
		if err != nil {
			t.Fatal(err)
		}
		if page.Count != 6 || pages > 3 {
			t.Fatalf("page %+v", page)
		}
		for _, n := range page.Nodes {
			got = append(got, n.ID)
			if n.OnPath != (n.ID == "u-1" || n.ID == "a-alt") {
				t.Fatalf("onPath of %s is %v", n.ID, n.OnPath)
			}
			if n.ID == "u-1" && n.Preview != "读取 R" {
				t.Fatalf("preview of u-1 %q", n.Preview)
			}
		}
		if page.NextAfterSeq == nil {
			break
		}
		opts.AfterSeq = page.NextAfterSeq
	}
	if strings.Join(got, ",") != "u-1,a-read,r-read,a-final,a-alt,meta-cwd" {
		t.Fatalf("tree pages %v", got)
	}
}

func TestLabelsLastWinsAndClearedIsAbsent(t *testing.T) {
	label := func(id, parent, target, text string) string {
		value := `null`
		if text != "" {
			value = `"` + text + `"`
		}
		return `{"id":"` + id + `","parentId":"` + parent + `","timestamp":1733000006000,"type":"metadata",` +
			`"key":"session.label","value":{"targetId":"` + target + `","label":` + value + `}}`
	}
	store := memoryWith(t, append(append([]string{}, chapter...),
		label("l-1", "meta-cwd", "a-read", "first read"),
		label("l-2", "l-1", "u-1", "start"),
		label("l-3", "l-2", "a-read", "the read"),
		label("l-4", "l-3", "u-1", "")))
	labels, err := store.Labels()
	want := session.Label{TargetID: "a-read", Label: "the read", EntryID: "l-3", Seq: 8}
	if err != nil || len(labels) != 1 || labels[0] != want {
		t.Fatalf("labels %+v %v", labels, err)
	}
	kids, _ := store.Children("u-1")
	if kids[0].Label != "the read" || kids[1].Label != "" {
		t.Fatalf("labels on nodes %+v", kids)
	}
}

func TestEmptyStoreHasNoLatestLeaf(t *testing.T) {
	store := memoryWith(t, nil)
	latest, err := store.LatestLeaf()
	if err != nil || latest != nil {
		t.Fatalf("latest leaf of an empty store %+v %v", latest, err)
	}
	leaves, err := store.Leaves()
	if err != nil || len(leaves.Leaves) != 0 || leaves.LatestBySeq != "" {
		t.Fatalf("leaves %+v %v", leaves, err)
	}
}

func TestListSessionsListsEveryJSONLFileWithItsState(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a-good.jsonl", strings.Join(chapter, "\n")+"\n")
	write("b-torn.jsonl", chapter[0]+"\n"+`{"id":"a-read","par`)
	write("c-corrupt.jsonl", "not json\n")
	write("notes.txt", "not a session\n")
	list, err := session.ListSessions(dir, session.ListOptions{Sort: session.SortPath})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d records, want the three .jsonl files: %+v", len(list), list)
	}
	good, torn, corrupt := list[0], list[1], list[2]
	if good.Path != filepath.Join(dir, "a-good.jsonl") || good.State == nil || *good.State != session.StateReady ||
		good.FirstUserText == nil || *good.FirstUserText != "读取 README.md，告诉我项目名" ||
		good.LatestLeafID == nil || *good.LatestLeafID != "meta-cwd" || good.Entries == nil || *good.Entries != 6 ||
		good.LatestTimestamp == nil || *good.LatestTimestamp != json.Number("1733000005000") || good.Error != nil {
		t.Fatalf("good %+v", good)
	}
	if torn.State == nil || *torn.State != session.StateNeedsRepair || *torn.LatestLeafID != "u-1" {
		t.Fatalf("torn %+v", torn)
	}
	if corrupt.Error == nil || corrupt.Error.Code != "corrupt_line" || corrupt.State != nil {
		t.Fatalf("corrupt %+v", corrupt)
	}
	one := uint64(1)
	list, err = session.ListSessions(dir, session.ListOptions{Limit: &one})
	if err != nil || len(list) != 1 {
		t.Fatalf("limit 1: %+v %v", list, err)
	}
	_, err = session.ListSessions(filepath.Join(dir, "missing"), session.ListOptions{})
	asError(t, err, session.ErrIO)
}

func TestSearchFindsAHitOnASideBranch(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "chapter.jsonl"), []byte(strings.Join(chapter, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	result, err := session.Search(dir, session.SearchQuery{Query: "无法读取"})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Hits) != 1 || result.Hits[0].EntryID != "a-alt" || result.Hits[0].OnLatestPath ||
		result.Hits[0].Path != "chapter.jsonl" || result.Sessions != 1 || result.Entries != 6 {
		t.Fatalf("%+v", result)
	}
	result, err = session.Search(dir, session.SearchQuery{Query: "无法读取", LatestPathOnly: true})
	if err != nil || len(result.Hits) != 0 {
		t.Fatalf("latest path only: %+v %v", result, err)
	}
	_, err = session.Search(dir, session.SearchQuery{Query: " "})
	asError(t, err, session.ErrInvalidArgument)
}
