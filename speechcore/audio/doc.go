// Package audio holds the sample-level work of the speech core: PCM16 and float conversion, WAV
// reading and writing, G.711, resampling between the rates voiced speaks, and Whisper's log-mel
// front end with its Slaney filterbank.
package audio
