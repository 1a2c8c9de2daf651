//go:build !session_nopkgconfig

package session

// The package finds libsession with pkg-config (session.pc, installed by
// scripts/install.sh). Build with -tags session_nopkgconfig to give the flags yourself
// in CGO_CFLAGS / CGO_LDFLAGS instead, e.g. to link libsession.a statically.

// #cgo pkg-config: session
import "C"
