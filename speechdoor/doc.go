// Package speechdoor serves the speech engines (package speechcore) over HTTP and WebSocket: the
// raw speech doors /v1/transcribe, /v1/synthesize, /v1/speak/stream, /v1/audio/transcriptions,
// /v1/audio/speech, /v1/audio/transcript and /v1/speech/health, with what they share (Doors: the
// session gate, socket registry, meter, text budget, open transcripts, their series) and their
// refusals. speechdoor imports speechcore; speechcore never imports speechdoor, and speechdoor
// imports neither session nor rtc (import_test.go pins it).
package speechdoor
