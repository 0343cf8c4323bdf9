package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/voiced/voiced/session"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/whisper"
	"github.com/voiced/voiced/wire"
)

// hearer is what Ears needs of Whisper (*whisper.Engine).
type hearer interface {
	TranscribeAs(ctx context.Context, pcm16k []float32, req whisper.Request) (whisper.Result, error)
	TranscribeMelAs(ctx context.Context, mel []float32, req whisper.Request) (whisper.Result, error)
	NumMels() int
}

// Ears is Whisper as the conversation's ears (one window at a time: the conversation splits
// longer utterances), on Whisper's shared queue: finals fairly between conversations, then the
// newest partial of each.
type Ears struct {
	whisper func() hearer          // the loaded engine, nil until it is
	observe func(r whisper.Result) // each transcription's timings, for the speech metrics
}

var (
	_ session.SharedEars  = Ears{}
	_ session.MelEars     = Ears{}
	_ session.LogprobEars = Ears{}
)

// NewEars is the service's Whisper as Ears, looked up per call.
func NewEars(svc *speechcore.Service) Ears {
	return Ears{
		whisper: func() hearer {
			if w := svc.Whisper; w != nil {
				return w
			}
			return nil
		},
		observe: svc.ObserveTranscription,
	}
}

// Transcribe decodes one utterance as a final of its own.
func (e Ears) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	return e.TranscribeAs(ctx, pcm, session.Hearing{})
}

// TranscribeAs puts the conversation's request in Whisper's queue as its own.
func (e Ears) TranscribeAs(ctx context.Context, pcm []float32, h session.Hearing) (string, error) {
	w := e.whisper()
	if w == nil {
		return "", speechcore.ErrNotWarm
	}
	r, err := w.TranscribeAs(ctx, pcm, hearingRequest(h))
	if err != nil {
		return "", languageError(err)
	}
	e.observe(r)
	detected(h, r)
	return r.Text, nil
}

// TranscribeLogprobs is TranscribeAs with the decoder's log-probability of each text token
// (whisper.Request.Logprobs): a transcription session's include[] logprobs.
func (e Ears) TranscribeLogprobs(ctx context.Context, pcm []float32, h session.Hearing) (string, []wire.Logprob, error) {
	w := e.whisper()
	if w == nil {
		return "", nil, speechcore.ErrNotWarm
	}
	req := hearingRequest(h)
	req.Logprobs = true
	r, err := w.TranscribeAs(ctx, pcm, req)
	if err != nil {
		return "", nil, languageError(err)
	}
	e.observe(r)
	detected(h, r)
	lps := make([]wire.Logprob, len(r.Logprobs))
	for i, lp := range r.Logprobs {
		lps[i] = wire.Logprob{Token: lp.Token, Bytes: lp.Bytes, Logprob: lp.Logprob}
	}
	return r.Text, lps, nil
}

// hearingRequest is a conversation's place in Whisper's queue.
func hearingRequest(h session.Hearing) whisper.Request {
	req := whisper.Request{Owner: h.Conversation, Kind: whisper.Final, Language: h.Language}
	if h.Partial {
		req.Kind = whisper.Partial
	}
	return req
}

// detected tells the conversation the language a final was detected in (Hearing.Detected).
func detected(h session.Hearing, r whisper.Result) {
	if h.Detected != nil && r.Detected {
		h.Detected(r.Language)
	}
}

// NumMels is Whisper's mel bands (80 before it is loaded: the conversation asks only once warm).
func (e Ears) NumMels() int {
	if w := e.whisper(); w != nil {
		return w.NumMels()
	}
	return 80
}

// TranscribeMel decodes a window from the features the conversation keeps (session.MelEars): a
// partial, or a final whose turn the partials streamed.
func (e Ears) TranscribeMel(ctx context.Context, mel []float32, h session.Hearing) (string, error) {
	w := e.whisper()
	if w == nil {
		return "", speechcore.ErrNotWarm
	}
	r, err := w.TranscribeMelAs(ctx, mel, hearingRequest(h))
	if err != nil {
		return "", languageError(err)
	}
	e.observe(r)
	detected(h, r)
	return r.Text, nil
}

// languageError marks Whisper's language refusals as session.ErrLanguageNotServed, so the
// conversation names them in the transcription's failed event.
func languageError(err error) error {
	if errors.Is(err, whisper.ErrLanguageNotServed) || errors.Is(err, whisper.ErrUnknownLanguage) {
		return fmt.Errorf("%w: %w", session.ErrLanguageNotServed, err)
	}
	return err
}
