package squelch

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrConfig wraps every configuration refusal from New and Load.
	ErrConfig = errors.New("squelch config")
	// ErrNoRuntime means no ONNX Runtime environment is open (speechcore/runtime.Open first).
	ErrNoRuntime = errors.New("no onnx runtime environment open")
	// ErrModel means the model file is missing, unreadable, or not a Silero VAD export.
	ErrModel = errors.New("silero vad model")
	// ErrClosed is returned by Push after Close.
	ErrClosed = errors.New("squelch closed")
)
