// Package session is the Go binding of libsession, an append-only session tree for AI
// coding agents: the conversation is a tree of entries stored as JSONL, one entry per
// line, and the caller names a leaf to get the path from the root to it and the
// model-facing messages on that path, complete.
//
// It is a thin cgo layer over the C ABI in session.h; it uses only the standard library.
// Entries go in and come out as JSON text ([]byte / json.RawMessage), exactly as the
// library stores them, so nothing is lost in a Go struct round trip.
//
//	store, report, err := session.Open("s.jsonl")
//	if err != nil { ... }
//	defer store.Close()
//	if report.State == session.StateNeedsRepair { ... } // torn last line: read-only
//	_, err = store.Append([]byte(`{"id":"u-1","parentId":null,"timestamp":1,
//	    "type":"message","message":{"role":"user","content":"hi"}}`))
//	msgs, err := store.MessagesOnPath("u-1") // [{"role":"user","content":"hi"}]
//
// # What the model sees, and moving around the tree
//
// BuildContext (pure, over a JSON array of entries) and Store.BuildContext return
// what to send to the model for a leaf: the latest compaction's summary, the messages
// it keeps, tool pairing checked per interaction (ContextOptions.OnDefect), metadata
// replayed over the whole path and, with a Budget, whole interactions kept from the
// newest backwards. Store.BuildContext counts tokens with a TokenEstimator of yours
// (called on the calling goroutine, once per message; it must not call the same
// store) or, when nil, the library's ceil(bytes / 4):
//
//	c, err := store.BuildContext(leaf, session.ContextOptions{
//	    Budget: &session.Budget{MaxTokens: 128000, ReservedOutput: 8000},
//	}, func(m json.RawMessage) (float64, error) { return tok.Count(m) })
//	send(c.Messages)
//
// Children, Roots, Leaves, LatestLeaf, Tree (paged) and Labels answer from the
// store's index in time proportional to the answer; ListSessions lists the session
// files of a folder from each file's head and last line.
//
// # Building
//
// The package links libsession through pkg-config (`#cgo pkg-config: session`), the
// way the library is installed:
//
//	scripts/install.sh /usr/local && ldconfig   # from a libsession checkout, as root
//	go get github.com/libsession/libsession/bindings/go
//	go build ./...
//
// For a prefix outside the linker's search path (a user prefix, or a development
// checkout staged with `scripts/install.sh "$PWD/target/stage"`), point pkg-config at it
// and record the library folder in the binary's rpath (or set LD_LIBRARY_PATH at run
// time):
//
//	export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
//	export CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib"
//	go test ./...
//
// To link libsession.a into the Go binary instead (no shared library at run time),
// build with the tag session_nopkgconfig and give the flags yourself:
//
//	CGO_CFLAGS="-I$PREFIX/include" \
//	CGO_LDFLAGS="$PREFIX/lib/libsession.a $(pkg-config --variable=native_libs session)" \
//	go build -tags session_nopkgconfig ./...
//
// # Errors
//
// Every failure the library reports is an *Error: its Status (the stable C status
// value), Code (the status name, e.g. "missing_parent"), Message, the details the
// library gives for that code (Pointer, ID, ChildID, ParentID, Line, Warnings, Cause,
// OSError, …) and the raw error JSON. errors.Is matches an *Error against the sentinels
// ErrInvalidArgument … ErrToolPairing by status (their numbers are read from the
// library's status table at start-up, never copied; ErrorForCode gives the sentinel of
// any code, including ones newer than this binding), and errors.As extracts it:
//
//	if errors.Is(err, session.ErrNeedsRepair) { ... }
//	var e *session.Error
//	if errors.Is(err, session.ErrMissingParent) && errors.As(err, &e) { use(e.ParentID) }
//
// A string argument that contains a NUL byte cannot be passed to C; it fails with
// ErrInvalidArgument without reaching the library. A call on a closed Store returns
// ErrClosed.
//
// # Concurrency and lifetime
//
// A Store may be used from many goroutines at once: appends commit in the order they
// reach the library, and a read waits for the appends that arrived before it. Close
// waits for the calls in flight, closes the store, and makes every later call return
// ErrClosed; it is idempotent. A finalizer closes a Store that was never closed, but
// only as a safety net: close stores explicitly.
//
// # Files: guarantees, and their limits
//
// A line is committed only when it ends with a newline. A file whose last line is
// unterminated opens as StateNeedsRepair: reads return the committed prefix, appends
// fail with ErrNeedsRepair, and the file is left untouched until the caller runs
// Repair, which moves the torn tail to a backup file. A failed write may have left half
// a line, so the store becomes tainted: that append returns ErrIO and every later call
// ErrTainted, with the original error as Cause; reopen the file to re-check it.
//
// One writer per file: a writer holds an advisory lock (flock) and a second writer,
// in this process or another, gets ErrLocked; OpenWith(path, Options{ReadOnly: true})
// reads beside a writer. By default a successful append means the OS accepted the
// bytes; Options.Durability DurabilityFsync or DurabilityFsyncBatch make it mean "on
// stable storage". Before each append the writer checks that its file was not
// replaced or extended by someone else (ErrFileChanged). The library never truncates
// or rewrites a file except through Repair. Options.Salvage loads what can be loaded
// from a damaged file, read-only.
//
// A store belongs to the process that opened it (the library answers
// ErrWrongProcess in a forked child); Go programs only fork to exec, so this matters
// only for stores handed across processes by other means.
package session
