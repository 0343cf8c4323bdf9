// Package bridge fits the speech engines and the meter to the conversation's seams: Whisper as
// session.Ears (its fair queue, finals before partials), Kokoro as session.Voice (voice names
// matched to the mount, speed clamped, punctuation alone is no error), the Silero squelch that
// lends its one VAD pass to the turn detector, and the meter as admission, budget and metering.
// It imports speechcore and its engines, session and meter; only cmd/voiced imports it.
package bridge
