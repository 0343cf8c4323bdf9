// Package audio holds the sample-level work of the speech core: PCM16 and float conversion, WAV
// reading and writing, G.711, resampling between the rates voiced speaks, and Whisper's log-mel
// front end with its Slaney filterbank.
//
// Invariants other packages rely on:
//   - Floats are int16/32768; Float32ToInt16 rounds half away from zero and clips, so int16 →
//     float → int16 is exact.
//   - DecodeWAVBytes allocates at most one sample per byte it was given (never trusting header
//     sizes), and every failure wraps one sentinel of errors.go (errors.Is), which the doors map
//     to named refusals.
//   - The resampler is zero-phase: output sample n is input time n·from/to, a stream of n samples
//     yields ceil(n·to/from), and a Resampler fed in any chunking, then flushed, yields exactly
//     (bit for bit) what Resample gives. It holds back Delay() = H input samples (76 at 24 kHz,
//     3.2 ms) until more input or Flush.
//   - LogMel is docs/models.md §1.1 (the HF per-chunk variant): [nMels*3000] float32,
//     mel-major, for one 30 s window; filters equal openai's mel_filters.npz to 4e-9.
//
// Measured (go test -bench, 2 shared cores under other engineers' load, so upper bounds):
// LogMel 30 s window, 80 mels: 20–60 ms (≈ 30 ms of CPU), 0 allocations with a reused Mel;
// Resample per second of audio: 24k→16k 1.3–2 ms, 48k→16k 2.8 ms, 44.1k→16k 2 ms,
// 8k→16k 0.9 ms, 16k→24k 1.1 ms. Resampler quality (TestResampleQuality, pure tones):
// passband ripple ≤ 0.0011 dB to 0.9 of the lower Nyquist (7.2 kHz at 16 kHz), stop-band
// attenuation ≥ 84 dB above the output Nyquist, aliases and images ≤ -88 dB; a 24k→16k→24k
// round trip of tones below 6 kHz returns at lag 0 with -92 dB error.
package audio
