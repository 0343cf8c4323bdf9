package realtimeclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
)

// fakeServer mints ticket "t1" for principal "p" and, on /v1/voice?ticket=t1, answers a
// session.update (refusing one without a session), echoes an append's byte count as a
// transcript, and sends a binary frame and a non-JSON frame first, which Next skips.
func fakeServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/voice/session", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer p" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(`{"ticket":"t1"}`))
	})
	mux.HandleFunc("GET /v1/voice", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ticket") != "t1" || r.Header.Get("OpenAI-Beta") != "realtime=v1" {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		c.Write(ctx, websocket.MessageBinary, []byte{1})
		c.Write(ctx, websocket.MessageText, []byte("not json"))
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var ev struct {
				Type    string          `json:"type"`
				Session json.RawMessage `json:"session"`
				Audio   string          `json:"audio"`
			}
			json.Unmarshal(data, &ev)
			switch {
			case ev.Type == "session.update" && string(ev.Session) == "{}":
				c.Write(ctx, websocket.MessageText, []byte(`{"type":"error","error":{"code":"x","message":"empty"}}`))
			case ev.Type == "session.update":
				c.Write(ctx, websocket.MessageText, []byte(`{"type":"session.created"}`))
				c.Write(ctx, websocket.MessageText, []byte(`{"type":"session.updated"}`))
			case ev.Type == "input_audio_buffer.append":
				pcm, _ := base64.StdEncoding.DecodeString(ev.Audio)
				b, _ := json.Marshal(map[string]any{"type": "conversation.item.input_audio_transcription.completed", "transcript": strings.Repeat("x", len(pcm))})
				c.Write(ctx, websocket.MessageText, b)
			}
		}
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestConversation(t *testing.T) {
	testkit.CheckLeaks(t)
	s := fakeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Ticket(ctx, nil, s.URL+"/v1/voice/session", "q"); err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("refused ticket: %v, want the status in the error", err)
	}
	ticket, err := Ticket(ctx, s.Client(), s.URL+"/v1/voice/session", "p")
	if err != nil || ticket != "t1" {
		t.Fatalf("ticket %q %v", ticket, err)
	}
	ws := "ws" + strings.TrimPrefix(s.URL, "http") + "/v1/voice?ticket=" + ticket
	var de *DialError
	if _, err := Dial(ctx, ws, Options{}); !errors.As(err, &de) || de.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial without the beta header: %v, want a DialError with 401", err)
	}
	c, err := Dial(ctx, ws, Options{Beta: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Update(ctx, map[string]any{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("refused update: %v, want the error event's message", err)
	}
	if err := c.Update(ctx, map[string]any{"voice": "v"}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := c.Send(ctx, AppendEvent(make([]byte, 960))); err != nil {
		t.Fatal(err)
	}
	ev, err := c.Next(ctx)
	if err != nil || ev.Type != "conversation.item.input_audio_transcription.completed" || len(ev.Transcript) != 960 || ev.At.Before(before) || len(ev.Raw) == 0 {
		t.Fatalf("event %+v %v", ev, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}
