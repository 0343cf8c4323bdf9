package session

import (
	"context"
	"strings"

	"github.com/voiced/voiced/wire"
)

// LogprobEars is Ears that also gives the decoder's log-probability of each token of a final
// (bridge.Ears: Whisper's). A session whose include[] names item.input_audio_transcription
// .logprobs hears its finals through it, and its completed events carry them.
type LogprobEars interface {
	TranscribeLogprobs(ctx context.Context, pcm16k []float32, h Hearing) (string, []wire.Logprob, error)
}

// hearLogprobs transcribes a committed utterance window by window as hearUtterance does, with
// each window's tokens and their log-probabilities (in order; never nil on success).
func (c *conversation) hearLogprobs(ctx context.Context, ears LogprobEars, pcm []float32, h Hearing) (string, []wire.Logprob, error) {
	var parts []string
	lps := []wire.Logprob{}
	for len(pcm) > 0 {
		n := min(len(pcm), earsWindow)
		text, got, err := ears.TranscribeLogprobs(ctx, pcm[:n], h)
		if err != nil {
			return strings.Join(parts, " "), nil, err
		}
		if text = strings.TrimSpace(text); text != "" {
			parts = append(parts, text)
		}
		lps = append(lps, got...)
		pcm = pcm[n:]
	}
	return strings.Join(parts, " "), lps, nil
}

// tokensFrom picks a partial's tokens that a delta streams: those ending past byte from of
// text (the text streamed before). A token's bytes are its piece of the text (Whisper's text is
// its tokens' bytes decoded together); when they do not add up to text the tokens cannot be
// placed, and the delta carries none ([]). Without include (want false) it is nil: null.
func tokensFrom(lps []wire.Logprob, text string, from int, want bool) []wire.Logprob {
	if !want {
		return nil
	}
	total := 0
	for _, lp := range lps {
		total += len(lp.Bytes)
	}
	out := []wire.Logprob{}
	if total != len(text) {
		return out
	}
	end := 0
	for _, lp := range lps {
		end += len(lp.Bytes)
		if end > from {
			out = append(out, lp)
		}
	}
	return out
}
