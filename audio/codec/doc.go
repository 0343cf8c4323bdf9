// Package codec encodes the speech voiced synthesises into the formats OpenAI's audio API serves
// (mp3, Ogg Opus, AAC, FLAC, WAV, PCM), streaming as samples arrive, and decodes the audio files
// clients upload (WAV, FLAC, MP3, Ogg Opus/Vorbis, MP4/M4A, WebM, ADTS AAC), recognised by their
// bytes, never by a name.
//
// Libraries, chosen by measurement (LLM.md "audio/codec"): LAME (Debian libmp3lame, cgo) for mp3
// out; libopus (audio/opus) with pion's Ogg writer/reader for Ogg Opus both ways;
// github.com/mewkiz/flac for FLAC out; github.com/hajimehoshi/go-mp3 for mp3 in; Debian's ffmpeg
// binary, bounded (one thread, CPU seconds, address space, wall time), only where nothing smaller
// does the job: AAC out, and MP4/M4A, WebM, Ogg Vorbis, ADTS and FLAC in (mewkiz/flac's decoder
// logs a line per frame at 24 kHz through the global log package).
//
// An Encoder is used by one goroutine; its bytes go to the io.Writer it was given, written by
// that goroutine (AAC: by the one goroutine copying ffmpeg's output, which Close waits for).
package codec
