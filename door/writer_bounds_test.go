package door

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"
)

// ctxConn refuses a write whose context is already done, as a real socket does.
type ctxConn struct{ recordConn }

func (c *ctxConn) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.recordConn.Write(ctx, typ, data)
}

// WriterConfig's zero values (found by make mutate): Queue 0 is a queue of one, not none, and
// Timeout 0 leaves a write bounded by Run's context only, not by an already expired deadline.
func TestWriterZeroConfig(t *testing.T) {
	w := NewWriter(WriterConfig{})
	if !w.TrySend(text("a")) {
		t.Fatal("Queue 0: TrySend refused the first message, want a queue of one")
	}
	if w.TrySend(text("b")) {
		t.Fatal("Queue 0: a second message was queued, want a queue of one")
	}
	conn := &ctxConn{}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background(), conn) }()
	if !w.Close(context.Background(), websocket.StatusNormalClosure, "") {
		t.Fatal("Close was refused")
	}
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil (Timeout 0: no write deadline)", err)
	}
	if wrote, _ := conn.got(); len(wrote) != 1 || wrote[0] != "MessageText:a" {
		t.Fatalf("wrote %q, want the one message", wrote)
	}
}

// WriteHeaders: a 401 carries the Bearer challenge unless the door set its own; other statuses
// carry none (found by make mutate).
func TestWriteHeadersChallenge(t *testing.T) {
	unauthorized := NewRefusal(http.StatusUnauthorized, "unauthorized", "")
	rec := httptest.NewRecorder()
	WriteHeaders(rec, unauthorized)
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="voiced"` {
		t.Errorf("401: WWW-Authenticate %q, want the Bearer challenge", got)
	}
	rec = httptest.NewRecorder()
	rec.Header().Set("WWW-Authenticate", `Bearer realm="voiced", error="invalid_token"`)
	WriteHeaders(rec, unauthorized)
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="voiced", error="invalid_token"` {
		t.Errorf("401 with the door's own challenge: WWW-Authenticate %q, want it kept", got)
	}
	rec = httptest.NewRecorder()
	WriteHeaders(rec, NewRefusal(http.StatusForbidden, "forbidden", ""))
	if got := rec.Header().Get("WWW-Authenticate"); got != "" {
		t.Errorf("403: WWW-Authenticate %q, want none", got)
	}
}
