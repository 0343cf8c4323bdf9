// Package squelch is the Silero VAD gate in front of the decoder: open and close thresholds, HANG of quiet before it closes, and LEAD of audio held back and handed over by the push that opens.
package squelch
