// Package turn decides who holds the floor: Hush (server_vad, silence only) and Semantic
// (semantic_vad, silence weighed against the partial transcript). Both read Silero's per-window
// speech probabilities from speechcore/squelch on the audio they are fed, in the caller's
// goroutine, so the floor is decided before audio is handed on and never waits on a network
// call. Every timestamp is counted from samples at 16 kHz, never read from a clock.
package turn
