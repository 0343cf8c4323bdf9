// Package squelch is the Silero VAD gate in front of the decoder: open and close thresholds, HANG
// of quiet before it closes, and LEAD of audio held back and handed over by the push that opens.
// What a push admits is exactly what is decoded and billed: len(admitted)/16000 seconds.
//
// The model is run here, window by window, through onnxruntime_go (Model, Stream), rather than
// through silero-vad-go's Detector: that Detector only reports segments from its own hysteresis
// (close fixed at threshold-0.15), reports a close that began in an earlier call as the error
// "unexpected speech end", and runs no inference when handed exactly one window. A squelch, and
// the turn detectors that read the same probabilities, need each window's probability. Stream
// follows Silero's reference streaming protocol (docs/models.md §3): 64 samples of context ahead
// of each 512-sample window, state carried, sr a true scalar. A test runs silero-vad-go's Detector
// on the same audio and checks both find the same speech.
//
// Load a Model once per process and share it (Config.Model): opening the session costs about
// half a second; each Squelch then owns only a Stream's few small tensors.
//
// Measured on the real model (gate_test.go): digital silence, a keyboard-like click train, pink
// and brown room tone from -70 to -10 dBFS and the recorded hush of the pocketsphinx recordings
// amplified to -20 dBFS never reach 0.11 and never open the gate; full-scale white noise
// reaches 0.72 in runs of at most 96 ms, which Confirm keeps shut.
package squelch
