package audio

import "errors"

// Sentinel errors. Callers match them with errors.Is; the doors map them to named refusals.
// Errors returned by this package wrap one of these with the detail ("audio: wav: fmt chunk 12
// bytes: broken header").
var (
	// ErrOddLength: PCM16 bytes must come in pairs.
	ErrOddLength = errors.New("odd-length PCM16 data")

	// ErrWAVHeader: not a RIFF/WAVE stream, or its fmt chunk is missing, short, inconsistent
	// (block align, channel count, rate) or comes after the data.
	ErrWAVHeader = errors.New("broken WAV header")

	// ErrWAVEncoding: a well-formed WAV whose encoding this package does not decode (ADPCM,
	// MP3-in-WAV, 12-bit PCM, ...).
	ErrWAVEncoding = errors.New("unsupported WAV encoding")

	// ErrWAVTruncated: a chunk, or the sample data, ends before its declared size or mid-frame.
	ErrWAVTruncated = errors.New("truncated WAV data")

	// ErrWAVEmpty: the data chunk holds no samples.
	ErrWAVEmpty = errors.New("empty WAV data")

	// ErrRate: a sample rate outside [MinRate, MaxRate].
	ErrRate = errors.New("unsupported sample rate")
)
