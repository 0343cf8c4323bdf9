package turn

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrConfig wraps every configuration refusal.
	ErrConfig = errors.New("turn detection config")
	// ErrClosed is returned by Feed after Close.
	ErrClosed = errors.New("turn detector closed")
)
