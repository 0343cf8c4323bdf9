package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// One conversation of the bench: turns spoken in paced 20 ms appends, the server's events
// stamped on arrival and noted per turn.

// traceEvents (VOICED_BENCH_TRACE=1) prints every server event but the deltas to stderr, and each
// turn's end of speech: to see where a turn that was never answered stopped.
var traceEvents = os.Getenv("VOICED_BENCH_TRACE") == "1"

// event is one server event as the bench needs it, stamped on arrival.
type event struct {
	typ        string
	at         time.Time
	audioEndMs int64
	text       string // transcript deltas, transcription text
	status     string // response.done
	errMsg     string
}

// turnResult is one answered turn's timing; zero times were not seen.
type turnResult struct {
	utt                                   utterance
	trueEndMs                             int64 // session timeline
	stop, stopped, transcribed, firstText time.Time
	firstAudio, done                      time.Time
	stopAudioEndMs                        int64
	firstSentence                         string
	status                                string
	early                                 bool
	started                               bool // speech_started arrived during this turn
}

// conversation opens one conversation and speaks turns utterances into it, one after another.
func (b *converseBench) conversation(ctx context.Context, turns int) ([]turnResult, error) {
	conn, err := b.open(ctx)
	if err != nil {
		return nil, err
	}
	events := make(chan event, 1024)
	var reader sync.WaitGroup
	defer func() { conn.CloseNow(); reader.Wait() }()
	if err := b.configure(ctx, conn); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	reader.Go(func() {
		defer close(events)
		for {
			ev, err := conn.Next(rctx)
			if err != nil {
				return
			}
			e := event{typ: ev.Type, at: ev.At, audioEndMs: ev.AudioEndMs, status: ev.Response.Status, errMsg: ev.Error.Message}
			switch ev.Type {
			case "response.audio_transcript.delta", "response.output_audio_transcript.delta":
				e.text = ev.Delta
			case "conversation.item.input_audio_transcription.completed":
				e.text = ev.Transcript
			case "response.audio.delta", "response.output_audio.delta":
				e.typ = "audio.delta"
				if raw, err := base64.StdEncoding.DecodeString(ev.Delta); err == nil {
					b.receivedSamples.Add(int64(len(raw) / 2))
				}
			case "response.done":
				b.reportedHeardUs.Add(int64(ev.Response.Usage.Heard * 1e6))
				b.reportedSpokeUs.Add(int64(ev.Response.Usage.Spoken * 1e6))
			}
			if traceEvents && e.typ != "audio.delta" && !strings.HasSuffix(e.typ, ".delta") {
				fmt.Fprintf(os.Stderr, "trace %p %s %s audio_end_ms=%d %s %s\n", conn, e.at.Format("15:04:05.000"), e.typ, e.audioEndMs, e.status, e.errMsg)
			}
			select {
			case events <- e:
			case <-rctx.Done():
				return
			}
		}
	})

	silence := appendFrame(make([]float32, rate24k*frameMs/1000))
	clock := time.Now()
	var sent int64 // frames sent: the session's audio clock is sent × 20 ms
	next := func() error {
		if wait := time.Until(clock.Add(time.Duration(sent*frameMs) * time.Millisecond)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	var results []turnResult
	for i := range turns {
		u := b.utts[i%len(b.utts)]
		pcm := to24k(u.pcm)
		const fl = rate24k * frameMs / 1000
		var frames [][]byte
		for at := 0; at < len(pcm); at += fl {
			chunk := pcm[at:min(at+fl, len(pcm))]
			if len(chunk) < fl {
				chunk = append(chunk, make([]float32, fl-len(chunk))...)
			}
			frames = append(frames, appendFrame(chunk))
		}
		endFrame := (u.end*rate24k/rate16k + fl - 1) / fl // frames up to and holding the last speech sample
		t := turnResult{utt: u, trueEndMs: sent*frameMs + int64(u.end)*1000/rate16k}
		var doneAt time.Time
		deadline := time.Time{}
		for k := 0; ; k++ {
			if err := next(); err != nil {
				return results, err
			}
			frame := silence
			if k < len(frames) {
				frame = frames[k]
			}
			if err := conn.Send(ctx, frame); err != nil {
				return results, fmt.Errorf("append: %w", err)
			}
			sent++
			if k == endFrame-1 {
				t.stop = time.Now()
				if traceEvents {
					fmt.Fprintf(os.Stderr, "trace %p %s speech ends (turn %d, utterance %s)\n", conn, t.stop.Format("15:04:05.000"), i, u.name)
				}
				deadline = t.stop.Add(20 * time.Second)
			}
		drain:
			for {
				select {
				case e, ok := <-events:
					if !ok {
						return results, errors.New("the server closed the conversation")
					}
					b.note(&t, e)
					if e.typ == "response.done" && !t.stop.IsZero() && doneAt.IsZero() {
						doneAt = e.at
					}
				default:
					break drain
				}
			}
			if !doneAt.IsZero() && time.Since(doneAt) >= b.gap && k >= len(frames) {
				break
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				// Tell a turn the server never heard begin (Silero found no speech in the
				// utterance: an input problem) from one it heard and did not answer.
				if t.started {
					b.errors.add("no answer within 20 s of the end of speech", nil)
				} else {
					b.errors.add("no speech_started for the utterance (not heard as speech)", nil)
				}
				break
			}
		}
		results = append(results, t)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	return results, nil
}

// note records the first of each event of the turn; before the end of speech only
// speech_stopped matters (an early end is reported as such).
func (b *converseBench) note(t *turnResult, e event) {
	switch e.typ {
	case "input_audio_buffer.speech_started":
		t.started = true
	case "input_audio_buffer.speech_stopped":
		if t.stop.IsZero() {
			t.early = true // the server ended the turn inside the utterance
		}
		if t.stopped.IsZero() {
			t.stopped, t.stopAudioEndMs = e.at, e.audioEndMs
		}
	case "conversation.item.input_audio_transcription.completed":
		if t.transcribed.IsZero() && !t.stopped.IsZero() {
			t.transcribed = e.at
		}
	case "response.audio_transcript.delta", "response.output_audio_transcript.delta":
		if t.firstText.IsZero() && !t.stopped.IsZero() {
			t.firstText, t.firstSentence = e.at, strings.TrimSpace(e.text)
		}
	case "audio.delta":
		if t.firstAudio.IsZero() && !t.stopped.IsZero() {
			t.firstAudio = e.at
		}
	case "response.done":
		if t.done.IsZero() && !t.stopped.IsZero() {
			t.done, t.status = e.at, e.status
		}
	case "error":
		b.errors.add("server error event", errors.New(e.errMsg))
	}
}
