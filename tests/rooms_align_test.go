package tests

import (
	"encoding/base64"
	"fmt"
	"math"
	"testing"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/fixture"
)

// Why the room corpus's words are aligned (issue 22, h-stopwait). The fixture Whisper reads the
// codec's phoneme t from the 80 ms slot t of the window it is given, counted from the window's
// first sample, and stops at the first slot that is silence. The window a turn's partials (and
// its final transcript) decode begins where the server's turn begins: Silero's onset (a 512-sample
// frame of the timeline) less prefix_padding_ms. Speech laid with the tones from the speech's own
// first sample therefore reached the fixture as ~0.2 s of silence, then tones off the 80 ms grid:
// it read ";" (no word) for every voice but one (whose window began at the timeline's 0 and read
// letters of garbage, ";rSɐoɛ”v": a "cut" by accident). So "stop, wait" resumed for most voices
// (no words: judged no interruption) and the backchannels resumed for the same reason, not because
// they are backchannels. A real Whisper reads speech wherever the window starts; the fixture needs
// the tones to start exactly at the window. alignWords finds where that is for each sound: the
// sound is spoken into a probe conversation (no reply, transcription on) at a timeline sample
// that is a multiple of 2560 (Silero's 512 and the codec's 1280 both divide it), speech_started's
// audio_start_ms says where the window began, and the tones are moved to start there (the speech
// carrier stays where it is: Silero hears the speech, not the tones). The trials then speak each
// sound at a multiple of 2560 too, so the server's window starts on the tones' first sample, and
// the probe's final transcript shows the fixture reads the words.

// alignGrid is the timeline period (24 kHz samples) a sound starts on: 2560 at 16 kHz.
const alignGrid = 3840

// roomPaddingMs is the rooms sessions' prefix_padding_ms: the turn window begins this long before
// Silero's onset, room for the words' tones ahead of the speech (alignedWords).
const roomPaddingMs = 2000

// roomVAD is server_vad with the rooms' padding.
func roomVAD() map[string]any {
	td := serverVAD()
	td["prefix_padding_ms"] = roomPaddingMs
	return td
}

// alignedWords is a sound the fixture reads as words and Silero hears as speech: the codec's
// tones of words (gain 1: the fixture decodes only a clip whose loudest feature is the codec's),
// from the sample w where the server's turn window begins (found by probing the server s), then
// at least one 80 ms slot of silence (where the fixture's read ends), then espeak-ng's speech of
// carrier (trimmed, to a 0.35 peak: loud enough for Silero, its loudest mel feature below the
// tones'), from speechAt. Mixing the two fails both ways: under tones at 0.15 the fixture's
// loudest-feature check fails (it reads shifted codes), under tones at gain 1 Silero hears no
// speech. Silero's onset, less the rooms' 2 s of prefix padding, puts the window's start ahead
// of the speech, on the tones.
func alignedWords(t *testing.T, s *server, name, voice, carrier, words string) roomSound {
	t.Helper()
	speech := peakTo(trimSilence(espeakVoice(t, voice, carrier, 150)), 0.35)
	ids := fixture.PhonemeIDs(words)
	if fixture.Phonemes(ids) != words {
		t.Fatalf("%q is not all in the fixture's vocabulary", words)
	}
	tones := fixture.Waveform(ids, 1)
	const speechAt = 24 * roomPaddingMs
	build := func(w int) []int16 {
		if w < 0 || w+len(tones)+fixture.PhonemeSamples > speechAt {
			t.Fatalf("%s: the window begins at %d: no room for the words' tones before the speech at %d", name, w, speechAt)
		}
		out := make([]int16, speechAt+len(speech))
		for i, v := range tones {
			out[w+i] = int16(math.Max(-32768, math.Min(32767, float64(v)*32768)))
		}
		copy(out[speechAt:], speech)
		return out
	}
	c := s.dialRealtime(t, s.mintGA(t, s.jwt("rooms-align", "")), false)
	defer c.close()
	c.until("session.created", nil)
	td := roomVAD()
	td["create_response"] = false
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio":  map[string]any{"input": map[string]any{"turn_detection": td, "transcription": map[string]any{"model": "whisper-1"}}},
		"voiced": map[string]any{"echo_cancellation": false}}})
	c.until("session.updated", nil)
	sent := 0
	w := 24 * 100 // a guess: Silero's onset 100 ms into the speech
	var read string
	for try := range 4 {
		pcm := build(w)
		pad := alignGrid * 2
		pad += (alignGrid - (sent+pad)%alignGrid) % alignGrid
		at := sent + pad
		all := append(append(make([]int16, pad), pcm...), silence24k(1.2)...)
		for i := 0; i < len(all); i += 12000 {
			c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(audio.Int16ToBytes(all[i:min(i+12000, len(all))]))})
		}
		sent += len(all)
		evs := c.until("conversation.item.input_audio_transcription.completed", nil)
		startMs := -1.0
		for _, e := range evs {
			if e.Type == "input_audio_buffer.speech_started" && startMs < 0 {
				startMs, _ = e.get("audio_start_ms").(float64)
			}
		}
		if startMs < 0 {
			t.Fatalf("%s: the probe heard no speech", name)
		}
		read = evs[len(evs)-1].str("transcript")
		got := int(startMs)*24 - at // where the window began, in the sound
		if got == w {
			t.Logf("%s: the turn window begins %.0f ms before the speech; the fixture reads %q (probe %d)", name, float64(speechAt-w)/24, read, try+1)
			if read != words {
				t.Fatalf("%s: the fixture reads %q from the aligned sound, want %q", name, read, words)
			}
			return roomSound{name: name, pcm: pcm, speechAt: speechAt}
		}
		t.Logf("%s: probe %d: the words' tones at %.0f ms, the window at %.0f ms of the sound; read %q", name, try+1, float64(w)/24, float64(got)/24, read)
		if got < 0 {
			t.Fatalf("%s: the window begins before the sound (%d)", name, got)
		}
		w = got
	}
	t.Fatalf("%s: the window's start did not settle in 4 probes (last read %q)", name, read)
	return roomSound{}
}

// soundString is for failure messages.
func (r roomSound) String() string {
	return fmt.Sprintf("%s (%.2f s, speech from %.0f ms)", r.name, float64(len(r.pcm))/24000, float64(r.speechAt)/24)
}
