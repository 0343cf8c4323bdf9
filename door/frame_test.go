package door

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// ReadFrame at its bounds (found by make mutate): with drain ≤ 0 an oversize frame is drained
// whole, however long, and a frame of exactly limit+1 bytes is too large, not over the drain; with a
// drain, limit+drain bytes are still drained and limit+drain+1 are over it.
func TestReadFrameBounds(t *testing.T) {
	for _, tc := range []struct {
		drain int64
		sizes []int // frames sent, in order
		want  []string
	}{
		{0, []int{11, 5000, 4}, []string{"too large", "too large", "4 bytes"}},
		{-1, []int{11, 3}, []string{"too large", "3 bytes"}},
		{100, []int{10, 110, 2, 111}, []string{"10 bytes", "too large", "2 bytes", "over drain"}},
	} {
		t.Run("drain "+strconv.FormatInt(tc.drain, 10), func(t *testing.T) {
			results := make(chan string, len(tc.sizes))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				conn.SetReadLimit(-1)
				defer conn.CloseNow()
				for {
					_, data, err := ReadFrame(r.Context(), conn, 10, tc.drain)
					switch {
					case errors.Is(err, ErrFrameTooLarge):
						results <- "too large"
					case errors.Is(err, ErrFrameOverDrain):
						results <- "over drain"
						return
					case err != nil:
						results <- "closed: " + err.Error()
						return
					default:
						results <- strconv.Itoa(len(data)) + " bytes"
					}
				}
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			for _, n := range tc.sizes {
				if err := c.Write(ctx, websocket.MessageBinary, []byte(strings.Repeat("x", n))); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range tc.want {
				select {
				case got := <-results:
					if got != want {
						t.Fatalf("frame %d (%d bytes): %q, want %q", i, tc.sizes[i], got, want)
					}
				case <-ctx.Done():
					t.Fatalf("frame %d: no result, want %q", i, want)
				}
			}
		})
	}
}
