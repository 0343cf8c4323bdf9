// Package realtimeclient is a small client of voiced's realtime conversation socket, shared by
// the load tool (cmd/voiced-bench) and the end-to-end tests: mint a ticket, dial, configure the
// session, send paced appends, read the server's events stamped on arrival. It checks nothing
// of the protocol: the strict client's rules live in tests/.
package realtimeclient

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
)

// DefaultReadLimit bounds one server event when Options.ReadLimit is zero: a reply's audio
// deltas are ~13 KiB, a session or item echo a few KiB.
const DefaultReadLimit = 16 << 20

// Ticket mints a ticket: POST url (a server's /v1/voice/session) with a principal JWT.
func Ticket(ctx context.Context, client *http.Client, url, principal string) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+principal)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("ticket: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ticket: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var t struct {
		Ticket string `json:"ticket"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.Ticket == "" {
		return "", fmt.Errorf("ticket: no ticket in %s", body)
	}
	return t.Ticket, nil
}

// Options say how Dial opens the socket; the zero value dials with the URL alone.
type Options struct {
	Bearer       string       // Authorization: Bearer (an ephemeral key or a principal JWT); "" sends none
	Beta         bool         // OpenAI-Beta: realtime=v1 (the beta dialect)
	HTTPClient   *http.Client // nil: http.DefaultClient
	Subprotocols []string
	ReadLimit    int64 // DefaultReadLimit when zero
}

// DialError is a refused dial; StatusCode is the HTTP answer's, 0 when none came.
type DialError struct {
	StatusCode int
	Status     string
	Err        error
}

func (e *DialError) Error() string {
	if e.Status != "" {
		return fmt.Sprintf("dial: %s: %v", e.Status, e.Err)
	}
	return fmt.Sprintf("dial: %v", e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// Conn is one realtime socket; the websocket's own methods (Write, Close, CloseNow) stay at hand.
type Conn struct {
	*websocket.Conn
}

// Dial opens a realtime socket at url (ws://…/v1/voice?ticket=…, ws://…/v1/realtime).
func Dial(ctx context.Context, url string, o Options) (*Conn, error) {
	h := http.Header{}
	if o.Bearer != "" {
		h.Set("Authorization", "Bearer "+o.Bearer)
	}
	if o.Beta {
		h.Set("OpenAI-Beta", "realtime=v1")
	}
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: o.HTTPClient, HTTPHeader: h, Subprotocols: o.Subprotocols})
	if err != nil {
		de := &DialError{Err: err}
		if resp != nil {
			de.StatusCode, de.Status = resp.StatusCode, resp.Status
		}
		return nil, de
	}
	limit := o.ReadLimit
	if limit == 0 {
		limit = DefaultReadLimit
	}
	conn.SetReadLimit(limit)
	return &Conn{conn}, nil
}

// Event is one server event as a client reads it, stamped on arrival: the type and the few
// fields a driver of the conversation looks at; Raw is the whole frame.
type Event struct {
	At         time.Time       `json:"-"`
	Raw        json.RawMessage `json:"-"`
	Type       string          `json:"type"`
	AudioEndMs int64           `json:"audio_end_ms"`
	Delta      string          `json:"delta"`      // transcript and audio deltas (audio base64)
	Transcript string          `json:"transcript"` // input transcription completed
	Response   struct {
		Status string `json:"status"`
		Usage  struct {
			Heard  float64 `json:"heard_seconds"`
			Spoken float64 `json:"spoken_seconds"`
		} `json:"usage"`
	} `json:"response"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Next reads the next server event. Binary frames and frames that are not a JSON object are
// skipped; the error is the socket's.
func (c *Conn) Next(ctx context.Context) (Event, error) {
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return Event{}, err
		}
		at := time.Now()
		if typ != websocket.MessageText {
			continue
		}
		var ev Event
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		ev.At, ev.Raw = at, data
		return ev, nil
	}
}

// Send writes one client event (a JSON text frame).
func (c *Conn) Send(ctx context.Context, event []byte) error {
	return c.Write(ctx, websocket.MessageText, event)
}

// Update sends a session.update with session and waits for session.updated; an error event
// refuses it. Events before the answer are dropped.
func (c *Conn) Update(ctx context.Context, session any) error {
	upd, err := json.Marshal(map[string]any{"type": "session.update", "session": session})
	if err != nil {
		return err
	}
	if err := c.Send(ctx, upd); err != nil {
		return err
	}
	for {
		ev, err := c.Next(ctx)
		if err != nil {
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

// AppendEvent is the input_audio_buffer.append carrying pcm (audio in the session's input
// format, pcm16 little-endian by default).
func AppendEvent(pcm []byte) []byte {
	b, _ := json.Marshal(map[string]string{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(pcm)})
	return b
}
