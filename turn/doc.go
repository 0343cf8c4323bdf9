// Package turn decides who holds the floor: Hush (server_vad, silence only) and Semantic
// (semantic_vad, silence weighed against the partial transcript). Both read per-window speech
// probabilities from a Speech model (Silero, from speechcore/squelch, adapted where the program
// is wired; turn does not import it) on the audio they are fed, in the caller's goroutine, so the
// floor is decided before audio is handed on and never waits on a network call. Every position
// is in samples at 16 kHz on the session's timeline, never read from a clock; milliseconds are
// the wire's business.
package turn
