// Package speechcore owns the speech models: the mounted assets, the ONNX Runtime environment,
// Whisper, Kokoro and the Silero squelch (in subpackages), and the Service that loads, warms and
// holds them, with their health and metrics. The HTTP and WebSocket doors that serve them are
// package speechdoor. Of voiced's other top-level packages speechcore imports only door (its
// refusal type), audio and sentence (import_test.go pins it).
package speechcore
