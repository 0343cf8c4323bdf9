package meter

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrStoreDown means the store refused a write or a read; the Meter keeps the counts and retries.
	ErrStoreDown = errors.New("meter store unavailable")
	// ErrQuotaExceeded means the principal has used its seconds for the day.
	ErrQuotaExceeded = errors.New("daily speech quota exceeded")
	// ErrBadFilter means a usage query's parameters do not parse.
	ErrBadFilter = errors.New("bad usage filter")
	// ErrClosed means the meter was closed.
	ErrClosed = errors.New("meter closed")
)
