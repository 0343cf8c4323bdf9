package speechdoor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/speechcore/fixture"
)

// speakingMount is one fixture mount for every speaking-door test, written once.
var speakingMount struct {
	once sync.Once
	dir  string
	err  error
}

// speakingServer is the speech Service started on the fixture mount and the three speaking doors
// served by an httptest server (without Guard: the doors themselves are under test).
type speakingServer struct {
	svc   *Doors
	srv   *httptest.Server
	speak *SpeakDoor
}

func newSpeakingServer(t testing.TB, cfg Config) *speakingServer {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	speech := startSpeech(t, fixtureMount(t, &speakingMount, "voiced-speaking-"), cfg.Log)
	svc, err := New(speech, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &speakingServer{svc: svc, speak: NewSpeakDoor(svc)}
	mux := http.NewServeMux()
	mux.Handle("GET /v1/synthesize", NewSynthesizeDoor(svc))
	mux.Handle("GET /v1/speak/stream", s.speak)
	mux.Handle("POST /v1/audio/speech", NewSpeechDoor(svc))
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *speakingServer) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + path
}

// decodePhonemes reads the fixture codec back from PCM16LE bytes: each 1920-sample phoneme is
// matched against every tone row. gain is the voice's amplitude (af_heart 1.0, am_adam 0.9).
func decodePhonemes(t *testing.T, pcm []byte) (phonemes string, gain float64) {
	t.Helper()
	if len(pcm)%(2*fixture.PhonemeSamples) != 0 {
		t.Fatalf("%d bytes is not a whole number of phonemes", len(pcm))
	}
	var ids []int
	for off := 0; off < len(pcm); off += 2 * fixture.PhonemeSamples {
		best, score := 0, 0.0
		for k := 1; k < fixture.NumTokens; k++ {
			row := fixture.ToneRow(k)
			var dot, norm float64
			for i, r := range row {
				x := float64(int16(binary.LittleEndian.Uint16(pcm[off+2*i:]))) / 32768
				dot += float64(r) * x
				norm += float64(r) * float64(r)
			}
			if norm > 0 && dot/norm > score {
				best, score = k, dot/norm
			}
		}
		if best == 0 || score < 0.5 {
			t.Fatalf("phoneme %d is silent (score %.3f)", off/(2*fixture.PhonemeSamples), score)
		}
		ids = append(ids, best)
		gain = score
	}
	return fixture.Phonemes(ids), gain
}

// wsClient reads a speaking door's frames in order.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dial(t *testing.T, url string, header http.Header) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", url, err, status)
	}
	conn.SetReadLimit(-1)
	t.Cleanup(func() { conn.CloseNow() })
	return &wsClient{t: t, conn: conn}
}

// next reads one frame: a JSON object (as a map) or binary bytes.
func (c *wsClient) next() (map[string]any, []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, data, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if typ == websocket.MessageBinary {
		return nil, data
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("frame %q is not JSON: %v", data, err)
	}
	return m, nil
}

// expect reads a JSON frame of the given type.
func (c *wsClient) expect(typ string) map[string]any {
	c.t.Helper()
	m, bin := c.next()
	if m == nil {
		c.t.Fatalf("got %d binary bytes, want a %q frame", len(bin), typ)
	}
	if m["type"] != typ {
		c.t.Fatalf("got %v, want a %q frame", m, typ)
	}
	return m
}

// expectError reads an error frame with the given name.
func (c *wsClient) expectError(name string) {
	c.t.Helper()
	m := c.expect("error")
	if m["name"] != name || m["message"] == "" {
		c.t.Fatalf("error %v, want name %q with a message", m, name)
	}
}

func (c *wsClient) binary() []byte {
	c.t.Helper()
	m, bin := c.next()
	if m != nil {
		c.t.Fatalf("got %v, want binary audio", m)
	}
	return bin
}

func (c *wsClient) send(typ websocket.MessageType, data []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, typ, data); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *wsClient) text(s string) { c.t.Helper(); c.send(websocket.MessageText, []byte(s)) }

// closed waits for the server to close the socket and returns the status.
func (c *wsClient) closed() websocket.StatusCode {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, data, err := c.conn.Read(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				c.t.Fatal("the server did not close the socket")
			}
			return websocket.CloseStatus(err)
		}
		c.t.Logf("frame before close: %.80q", data)
	}
}

func TestSynthesizeDoor(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	c := dial(t, s.wsURL("/v1/synthesize"), nil)

	ready := c.expect("ready")
	want := map[string]any{"modelId": "kokoro-82m", "voice": "af_heart", "sampleRate": 24000.0, "encoding": "pcm16le", "channels": 1.0, "device": "cpu", "executionProvider": "cpu"}
	for k, v := range want {
		if ready[k] != v {
			t.Errorf("ready.%s = %v, want %v", k, ready[k], v)
		}
	}

	// Two utterances, spoken in order, sentence by sentence, each header followed by its PCM.
	c.text("Hello world. The cat sat!")
	c.text("Read the test.")
	utterances := []struct {
		sentences []string
		phonemes  []string
	}{
		{[]string{"Hello world.", "The cat sat!"}, []string{"həlˈO wˈɜɹld.", "ði kˈæt sˈæt!"}},
		{[]string{"Read the test."}, []string{"ɹˈid ði tˈɛst."}},
	}
	for u, want := range utterances {
		total := 0.0
		for seq, sentence := range want.sentences {
			h := c.expect("audio")
			if h["utterance"] != float64(u) || h["seq"] != float64(seq) || h["text"] != sentence {
				t.Fatalf("header %v, want utterance %d seq %d text %q", h, u, seq, sentence)
			}
			_, hasFirst := h["firstFrameMs"]
			if hasFirst != (seq == 0) {
				t.Errorf("utterance %d seq %d: firstFrameMs present = %v", u, seq, hasFirst)
			}
			pcm := c.binary()
			if samples := h["samples"].(float64); int(samples)*2 != len(pcm) {
				t.Fatalf("header says %v samples, frame has %d bytes", samples, len(pcm))
			}
			if ms := h["durationMs"].(float64); math.Abs(ms-h["samples"].(float64)/24) > 1e-6 {
				t.Errorf("durationMs %v for %v samples", ms, h["samples"])
			}
			total += h["durationMs"].(float64)
			if got, _ := decodePhonemes(t, pcm); got != want.phonemes[seq] {
				t.Errorf("audio decodes to %q, want %q", got, want.phonemes[seq])
			}
		}
		done := c.expect("utteranceComplete")
		if done["utterance"] != float64(u) || done["chunks"] != float64(len(want.sentences)) || math.Abs(done["durationMs"].(float64)-total) > 1e-6 {
			t.Errorf("utteranceComplete %v, want utterance %d, %d chunks, %v ms", done, u, len(want.sentences), total)
		}
	}

	// Bad input is refused by name and the socket survives.
	c.send(websocket.MessageBinary, []byte{1, 2, 3, 4})
	c.expectError("binary_not_accepted")
	c.text("🙂 …")
	c.expectError("empty_text")
	c.text(strings.Repeat("a", 4<<20+1))
	c.expectError("text_too_large")
	c.text("Hello.")
	if h := c.expect("audio"); h["text"] != "Hello." {
		t.Errorf("after refusals: %v", h)
	}
	c.binary()
	c.expect("utteranceComplete")
	c.conn.Close(websocket.StatusNormalClosure, "")
}

func TestSynthesizeDoorQueryRefusals(t *testing.T) {
	s := newSpeakingServer(t, Config{Origins: door.MustOrigins("app.example")})
	tests := map[string]struct {
		query  string
		origin string
		status int
		name   string
	}{
		"voice not mounted":   {"?voice=nobody", "", 400, "voice_not_mounted"},
		"speed too fast":      {"?speed=2.5", "", 400, "speed_out_of_range"},
		"speed not a number":  {"?speed=fast", "", 400, "speed_out_of_range"},
		"origin not allowed":  {"", "https://evil.example", 403, "origin_not_allowed"},
		"origin allowed":      {"?voice=am_adam&speed=1.5", "https://app.example", 101, ""},
		"no origin (not web)": {"", "", 101, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, s.wsURL("/v1/synthesize"+tc.query), &websocket.DialOptions{HTTPHeader: h})
			if tc.status == 101 {
				if err != nil {
					t.Fatal(err)
				}
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
			if err == nil {
				conn.CloseNow()
				t.Fatal("upgraded")
			}
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("resp %v, want status %d", resp, tc.status)
			}
			var f door.ErrorFrame
			json.NewDecoder(resp.Body).Decode(&f)
			if f.Name != tc.name {
				t.Errorf("refusal %+v, want %s", f, tc.name)
			}
		})
	}
}

// Shutdown closes an idle socket with GoingAway.
func TestSynthesizeDoorDrains(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	c := dial(t, s.wsURL("/v1/synthesize"), nil)
	c.expect("ready")
	go s.svc.Sockets.Shutdown(context.Background(), time.Second)
	if code := c.closed(); code != websocket.StatusGoingAway {
		t.Errorf("close status %v, want going away", code)
	}
}

func FuzzParseSpeed(f *testing.F) {
	for _, s := range []string{"", "1", "0.5", "2", "2.0001", "NaN", "-1", "1e308", "fast"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSpeed(s)
		if err == nil && v != 0 && !(v >= 0.5 && v <= 2) {
			t.Fatalf("parseSpeed(%q) = %v accepted", s, v)
		}
	})
}

// BenchmarkSynthesizeFirstFrame measures firstFrameMs as the door reports it (text arrival to
// the first sentence's audio being ready), through a real socket on the fixture model.
func BenchmarkSynthesizeFirstFrame(b *testing.B) {
	s := newSpeakingServer(b, Config{})
	ctx := context.Background()
	conn, _, err := websocket.Dial(ctx, s.wsURL("/v1/synthesize"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	conn.Read(ctx) // ready
	var first float64
	for b.Loop() {
		conn.Write(ctx, websocket.MessageText, []byte("Hello world, the cat sat. Read the test."))
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if json.Unmarshal(data, &m) != nil {
				continue
			}
			if v, ok := m["firstFrameMs"].(float64); ok {
				first += v
			}
			if m["type"] == "utteranceComplete" {
				break
			}
		}
	}
	b.ReportMetric(first/float64(b.N), "firstFrameMs")
}

// rawWS is a bare RFC 6455 client: it can send a close frame and keep reading what the server
// sends before its own close, which a full client library hides.
type rawWS struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, url string) *rawWS {
	t.Helper()
	u := strings.TrimPrefix(url, "ws://")
	host, path, _ := strings.Cut(u, "/")
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(nc, "GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path, host)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	return &rawWS{t: t, nc: nc, br: br}
}

// write sends one masked frame.
func (c *rawWS) write(opcode byte, payload []byte) {
	c.t.Helper()
	frame := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		frame = append(frame, 0x80|byte(n))
	case n < 1<<16:
		frame = append(frame, 0x80|126, byte(n>>8), byte(n))
	default:
		frame = append(frame, 0x80|127)
		frame = binary.BigEndian.AppendUint64(frame, uint64(n))
	}
	mask := []byte{1, 2, 3, 4}
	frame = append(frame, mask...)
	for i, b := range payload {
		frame = append(frame, b^mask[i%4])
	}
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next frame's opcode and payload (the server sends unfragmented frames).
func (c *rawWS) read() (byte, []byte) {
	c.t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(c.br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(c.br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(c.br, payload); err != nil {
		c.t.Fatalf("read payload: %v", err)
	}
	return h[0] & 0x0f, payload
}

func (c *rawWS) readType() string {
	c.t.Helper()
	op, p := c.read()
	if op == 2 {
		return "binary"
	}
	if op == 8 {
		return "close"
	}
	var m struct{ Type string }
	json.Unmarshal(p, &m)
	return m.Type
}

// A client that closes right after its text still gets the utterance in flight: the door
// finishes it before it reads (and answers) the close.
func TestSynthesizeDoorFinishesUtteranceOnClientClose(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{})
	release, err := s.svc.speech.Kokoro.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := dialRaw(t, s.wsURL("/v1/synthesize"))
	if got := c.readType(); got != "ready" {
		t.Fatalf("first frame %q", got)
	}
	c.write(1, []byte("Hello world. The cat sat."))
	c.write(8, []byte{0x03, 0xe8}) // close 1000, sent while the utterance waits for the model
	release()
	want := []string{"audio", "binary", "audio", "binary", "utteranceComplete", "close"}
	for i, w := range want {
		if got := c.readType(); got != w {
			t.Fatalf("frame %d is %q, want %q", i, got, w)
		}
	}
}

// A socket that sends nothing is closed after the idle timeout (issue 18 item 8e: it was held
// for ever); an utterance being spoken is not idle.
func TestSynthesizeIdleCloses(t *testing.T) {
	testkit.CheckLeaks(t)
	s := newSpeakingServer(t, Config{SocketIdle: 200 * time.Millisecond})
	release, err := s.svc.speech.Kokoro.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := dial(t, s.wsURL("/v1/synthesize"), nil)
	c.expect("ready")
	c.text("Hello.")
	time.Sleep(600 * time.Millisecond) // three idle periods pass while the utterance waits for the model
	release()
	c.expect("audio")
	c.binary()
	c.expect("utteranceComplete")
	c.expectError("idle_timeout") // and once it is spoken, idle counts again
	if code := c.closed(); code != websocket.StatusPolicyViolation {
		t.Errorf("idle close status %v, want 1008", code)
	}
}
