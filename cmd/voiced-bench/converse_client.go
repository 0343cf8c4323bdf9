package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/voiced/voiced/internal/realtimeclient"
	"github.com/voiced/voiced/internal/testkit"
)

// The bench's side of internal/realtimeclient: a principal, a ticket, the socket, the
// session.update, appends.

// principal is the JWT for the next conversation: a fresh subject each, so per-tenant caps do
// not cut the ramp, unless a fixed -jwt was given.
func (b *converseBench) principal() (string, error) {
	if b.jwt != "" {
		return b.jwt, nil
	}
	now := time.Now()
	return testkit.SignJWT(jwa.HS256, b.secret, map[string]any{
		"sub": fmt.Sprintf("bench-%d", b.seq.Add(1)), "iat": now, "exp": now.Add(10 * time.Minute)})
}

// open mints a ticket (POST /v1/voice/session) and opens WS /v1/voice with it, beta dialect.
func (b *converseBench) open(ctx context.Context) (*realtimeclient.Conn, error) {
	p, err := b.principal()
	if err != nil {
		return nil, err
	}
	ticket, err := realtimeclient.Ticket(ctx, nil, b.c.http("/v1/voice/session"), p)
	if err != nil {
		return nil, err
	}
	conn, err := realtimeclient.Dial(ctx, b.c.ws("/v1/voice?ticket="+ticket), realtimeclient.Options{Beta: true})
	if err != nil {
		return nil, fmt.Errorf("/v1/voice: %w", err)
	}
	return conn, nil
}

// configure sends the session.update (server_vad, input transcription on) and waits for
// session.updated.
func (b *converseBench) configure(ctx context.Context, conn *realtimeclient.Conn) error {
	td := map[string]any{"type": "server_vad"}
	if b.turnType != "" {
		td["type"] = b.turnType
	}
	if b.silenceMs > 0 && td["type"] == "server_vad" {
		td["silence_duration_ms"] = b.silenceMs
	}
	if b.eagerness != "" && td["type"] == "semantic_vad" {
		td["eagerness"] = b.eagerness
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Update(cctx, map[string]any{
		"input_audio_format": "pcm16", "output_audio_format": "pcm16",
		"input_audio_transcription": map[string]any{"model": "whisper-1"},
		"turn_detection":            td,
		// The bench plays no reply, so its microphone holds no echo: it says so. With
		// cancellation on, the server takes each reply as playing in real time from when it was
		// sent, and the next turn (streamed -gap after response.done, while the reply would
		// still be playing) is withheld by the residual-echo gate as that reply's echo
		// (TestSoakShort: 3 utterances not heard as speech).
		"voiced": map[string]any{"echo_cancellation": false},
	})
}

// appendFrame is one paced 20 ms append.
func appendFrame(pcm24k []float32) []byte {
	return realtimeclient.AppendEvent(pcm16Bytes(pcm24k))
}
