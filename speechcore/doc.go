// Package speechcore owns the speech models and the raw speech doors: the mounted assets, the
// ONNX Runtime environment, Whisper, Kokoro and the Silero squelch (in subpackages), and the HTTP
// and WebSocket routes that serve them (/v1/transcribe, /v1/synthesize, /v1/speak/stream,
// /v1/audio/*, /v1/speech/health). It imports none of voiced's other top-level packages.
package speechcore
