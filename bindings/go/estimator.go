package session

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"math"
	"runtime/cgo"
	"unsafe"
)

// TokenEstimator counts the tokens of one message for BuildContext's budget, given the
// message's JSON (a copy the estimator may keep). It is called on the calling
// goroutine, once per kept message and once for the summary message, and never after
// BuildContext returns. It must not call the same Store: it runs inside the store's
// turn, so that call would wait for itself forever. An error, a negative or a
// non-finite count fails BuildContext with ErrInvalidArgument (the error's EntryID
// names the message, and errors.Is/As reach the estimator's error through Unwrap); a
// panic in it is re-raised by BuildContext once the library has returned.
type TokenEstimator func(message json.RawMessage) (float64, error)

// estimation is what one BuildContext call shares with its estimator callbacks through a
// cgo.Handle: the func, and the first error or panic it raised.
type estimation struct {
	estimate TokenEstimator
	err      error
	panicked bool
	panicVal interface{}
}

// sessionGoEstimate is the SessionTokenEstimator the library calls (through the C
// trampoline in context.go, which passes the handle as user_data). A Go panic must not
// unwind through the library's frames, so it is recovered here and re-raised by the
// caller; once the estimator has failed, later calls answer NaN without running it.
//
//export sessionGoEstimate
func sessionGoEstimate(message *C.char, n C.size_t, handle C.uintptr_t) (tokens C.double) {
	e := cgo.Handle(handle).Value().(*estimation)
	nan := C.double(math.NaN())
	if e.err != nil || e.panicked {
		return nan
	}
	defer func() {
		if r := recover(); r != nil {
			e.panicked, e.panicVal = true, r
			tokens = nan
		}
	}()
	msg := make(json.RawMessage, int(n))
	copy(msg, unsafe.Slice((*byte)(unsafe.Pointer(message)), int(n)))
	count, err := e.estimate(msg)
	if err != nil {
		e.err = err
		return nan
	}
	return C.double(count)
}
