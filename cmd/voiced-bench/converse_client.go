package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// The bench's realtime client: a principal, a ticket, the socket, the session.update, appends.

// principal is the JWT for the next conversation: a fresh subject each, so per-tenant caps do
// not cut the ramp, unless a fixed -jwt was given.
func (b *converseBench) principal() (string, error) {
	if b.jwt != "" {
		return b.jwt, nil
	}
	tok, err := jwt.NewBuilder().Subject(fmt.Sprintf("bench-%d", b.seq.Add(1))).
		IssuedAt(time.Now()).Expiration(time.Now().Add(10 * time.Minute)).Build()
	if err != nil {
		return "", err
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, b.secret))
	return string(signed), err
}

// open mints a ticket (POST /v1/voice/session) and opens WS /v1/voice with it, beta dialect.
func (b *converseBench) open(ctx context.Context) (*websocket.Conn, error) {
	p, err := b.principal()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.c.http("/v1/voice/session"), strings.NewReader(`{}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ticket: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var t struct {
		Ticket string `json:"ticket"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.Ticket == "" {
		return nil, fmt.Errorf("ticket: no ticket in %s", body)
	}
	h := http.Header{}
	h.Set("OpenAI-Beta", "realtime=v1")
	conn, resp, err := websocket.Dial(ctx, b.c.ws("/v1/voice?ticket="+t.Ticket), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial /v1/voice: %s", resp.Status)
		}
		return nil, fmt.Errorf("dial /v1/voice: %w", err)
	}
	conn.SetReadLimit(16 << 20)
	return conn, nil
}

// configure sends the session.update (server_vad, input transcription on) and waits for
// session.updated.
func (b *converseBench) configure(ctx context.Context, conn *websocket.Conn) error {
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
	upd, _ := json.Marshal(map[string]any{"type": "session.update", "session": map[string]any{
		"input_audio_format": "pcm16", "output_audio_format": "pcm16",
		"input_audio_transcription": map[string]any{"model": "whisper-1"},
		"turn_detection":            td,
	}})
	if err := conn.Write(ctx, websocket.MessageText, upd); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var ev struct {
			Type  string `json:"type"`
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := readJSON(cctx, conn, &ev); err != nil {
			return fmt.Errorf("waiting for session.updated: %w", err)
		}
		switch ev.Type {
		case "session.updated":
			return nil
		case "error":
			return fmt.Errorf("session.update refused: %s", ev.Error.Message)
		}
	}
}

// appendFrame is one paced 20 ms append.
func appendFrame(pcm24k []float32) []byte {
	b, _ := json.Marshal(map[string]string{"type": "input_audio_buffer.append",
		"audio": base64.StdEncoding.EncodeToString(pcm16Bytes(pcm24k))})
	return b
}
