package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef-test-secret")

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// token signs a principal JWT with the test secret; claims override the defaults.
func token(t testing.TB, clk *clock, claims map[string]any) string {
	t.Helper()
	base := map[string]any{"sub": "user-1", "org": "org-a", "exp": clk.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		base[k] = v
	}
	return testkit.JWT(t, testSecret, base)
}

type testServer struct {
	*Server
	URL   string
	clock *clock
	http  *httptest.Server
}

func newTestServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	clk := newClock()
	v, err := NewVerifier(context.Background(), VerifierConfig{Secret: testSecret, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Verifier = v
	cfg.Now = clk.Now
	if cfg.Tickets == nil {
		cfg.Tickets = NewMemoryTickets(clk.Now)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/voice/session", s.ServeVoiceSession)
	mux.HandleFunc("POST /v1/realtime/sessions", s.ServeBetaSessions)
	mux.HandleFunc("POST /v1/realtime/client_secrets", s.ServeClientSecrets)
	mux.HandleFunc("POST /v1/realtime/transcription_sessions", s.ServeTranscriptionSessions)
	mux.HandleFunc("GET /v1/voice", s.ServeVoice)
	mux.HandleFunc("GET /v1/realtime", s.ServeRealtime)
	mux.HandleFunc("GET /v1/voice/health", s.ServeHealth)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.Close()
		s.Wait()
	})
	return &testServer{Server: s, URL: hs.URL, clock: clk, http: hs}
}

// post sends a JSON POST with a bearer token and decodes the JSON answer.
func (ts *testServer) post(t testing.TB, path, bearer string, body any, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	var rd *strings.Reader
	if body == nil {
		rd = strings.NewReader("")
	} else {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, rd)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (ts *testServer) ticket(t testing.TB) string {
	t.Helper()
	code, out := ts.post(t, "/v1/voice/session", token(t, ts.clock, nil), nil, nil)
	if code != http.StatusOK {
		t.Fatalf("mint ticket: %d %v", code, out)
	}
	return out["ticket"].(string)
}

// client is a realtime test client.
type client struct {
	t    testing.TB
	conn *websocket.Conn
	resp *http.Response
}

func (ts *testServer) dial(t *testing.T, path string, opts *websocket.DialOptions) (*client, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+path, opts)
	if err != nil {
		return nil, resp, err
	}
	conn.SetReadLimit(ReadLimit)
	c := &client{t: t, conn: conn, resp: resp}
	t.Cleanup(func() { conn.CloseNow() })
	return c, resp, nil
}

// open dials /v1/voice with a fresh ticket and reads session.created.
func (ts *testServer) open(t *testing.T) *client {
	t.Helper()
	c, _, err := ts.dial(t, "/v1/voice?ticket="+ts.ticket(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.expect("session.created")
	return c
}

func (c *client) send(ev map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(ev)
	c.sendRaw(string(b))
}

func (c *client) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next reads one server event.
func (c *client) next() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		c.t.Fatalf("server event is not JSON: %s", b)
	}
	if ev["event_id"] == nil || ev["event_id"] == "" {
		c.t.Fatalf("server event without event_id: %s", b)
	}
	return ev
}

// expect reads events and checks their types in order.
func (c *client) expect(types ...string) []map[string]any {
	c.t.Helper()
	var out []map[string]any
	for _, want := range types {
		ev := c.next()
		if ev["type"] != want {
			c.t.Fatalf("event %d: got %v, want %s (%v)", len(out), ev["type"], want, ev)
		}
		out = append(out, ev)
	}
	return out
}

// until reads events until one of type typ and returns all read (it included).
func (c *client) until(typ string) []map[string]any {
	c.t.Helper()
	var out []map[string]any
	for range 10000 {
		ev := c.next()
		out = append(out, ev)
		if ev["type"] == typ {
			return out
		}
	}
	c.t.Fatalf("no %s", typ)
	return nil
}

// expectError reads events until an error and checks its code.
func (c *client) expectError(code string) map[string]any {
	c.t.Helper()
	ev := c.next()
	if ev["type"] != "error" {
		c.t.Fatalf("got %v, want error %s", ev, code)
	}
	e := ev["error"].(map[string]any)
	if e["code"] != code {
		c.t.Fatalf("error code %v, want %s (%v)", e["code"], code, e)
	}
	return e
}

func types(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e["type"].(string)
	}
	return out
}

// ---- fakes for engines that are not the subject of these tests ----

// fakeEars "hears" a fixed text, once per utterance.
type fakeEars struct{ text string }

func (f fakeEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	return f.text, ctx.Err()
}

// fakeVoice speaks 10 ms of a tone per character, in one chunk per piece; gate, when set, is
// waited on before each piece's audio (to hold a reply mid-way).
type fakeVoice struct {
	gate chan struct{}
}

func (f fakeVoice) Speak(ctx context.Context, text, voice string, speed float64, emit func([]int16) error) error {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n := 240 * len(text)
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/24000))
	}
	return emit(pcm)
}

// energyDetector is a small energy gate standing in for Hush: speech starts on a loud push and stops
// after 200 ms of quiet.
type energyDetector struct {
	pos, quiet int64
	speaking   bool
}

func (f *energyDetector) Feed(pcm []float32, _ int64) ([]turn.Event, error) {
	var evs []turn.Event
	loud := audio.RMS(pcm) > 0.05
	switch {
	case loud && !f.speaking:
		f.speaking, f.quiet = true, 0
		evs = append(evs, turn.SpeechStarted{Start: f.pos})
	case !loud && f.speaking:
		f.quiet += int64(len(pcm))
		if f.quiet >= 3200 {
			f.speaking = false
			evs = append(evs, turn.SpeechStopped{End: f.pos + int64(len(pcm))})
		}
	case loud:
		f.quiet = 0
	}
	f.pos += int64(len(pcm))
	return evs, nil
}

func (f *energyDetector) Floor() turn.Floor {
	if f.speaking {
		return turn.Held
	}
	return turn.Quiet
}

func (f *energyDetector) Reset()       { f.speaking, f.quiet = false, 0 }
func (f *energyDetector) Close() error { return nil }

func newEnergyDetector(wire.TurnDetection, Partial) (turn.Detector, error) {
	return &energyDetector{}, nil
}

// pcm24 returns ms of 24 kHz PCM16 bytes: a loud tone or silence.
func pcm24(ms int, loud bool) []byte {
	n := 24 * ms
	s := make([]int16, n)
	if loud {
		for i := range s {
			s[i] = int16(12000 * math.Sin(2*math.Pi*300*float64(i)/24000))
		}
	}
	return audio.Int16ToBytes(s)
}

func appendEvent(b []byte) map[string]any {
	return map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(b)}
}

// recordingMeter keeps what it is handed.
type recordingMeter struct {
	mu   sync.Mutex
	recs []Usage
}

func (m *recordingMeter) Record(_ context.Context, u Usage) error {
	m.mu.Lock()
	m.recs = append(m.recs, u)
	m.mu.Unlock()
	return nil
}

func (m *recordingMeter) total() (heard, spoken time.Duration, subjects map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	subjects = map[string]bool{}
	for _, r := range m.recs {
		heard += r.Heard
		spoken += r.Spoken
		subjects[r.Subject+"/"+r.Org] = true
	}
	return
}
