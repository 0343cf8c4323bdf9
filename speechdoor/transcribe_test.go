package speechdoor

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/internal/testkit"
)

const sttSentence = "hˌaʊ kʊd aɪ nˈoʊ? ɪts ɐn ʌnˈænsɚɹəbəl kwˈɛstʃən."

func TestTranscribeDoorFinalOnEnd(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	ready := c.next()
	want := map[string]any{"type": "ready", "modelId": "whisper-small", "language": "en", "sampleRate": 16000.0,
		"encoding": "pcm16le", "channels": 1.0, "partialCadenceMs": 1000.0, "segmentMaxMs": 30000.0,
		"device": "cpu", "executionProvider": "cpu"}
	for k, v := range want {
		if ready[k] != v {
			t.Errorf("ready.%s = %v, want %v", k, ready[k], v)
		}
	}
	pcm, phonemes := codecSpeech(t, sttSentence)
	// 1.5 s first: a partial is due after 1 s of new audio, and is read before the rest is sent
	// (a final queued meanwhile would take precedence over a partial not yet started).
	c.sendAudio(pcm[:24000])
	first, early := c.until("delta", "partial")
	c.sendAudio(pcm[24000:])
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	final, partials := c.until("delta", "final")
	partials = append(append(early, first), partials...)
	if final["text"] != phonemes {
		t.Fatalf("final %q, want %q", final["text"], phonemes)
	}
	if final["segment"] != 0.0 || final["t0Ms"] != 0.0 || final["t1Ms"] != float64(len(pcm))*1000/16000 {
		t.Errorf("final %v: want segment 0, t0Ms 0, t1Ms %g", final, float64(len(pcm))*1000/16000)
	}
	deltas := append(partials, final)
	for i, d := range deltas {
		if d["type"] != "delta" {
			t.Fatalf("frame %v before the final", d)
		}
		if _, ok := d["decodeMs"].(float64); !ok {
			t.Errorf("delta %d has no decodeMs: %v", i, d)
		}
		_, hasFirst := d["firstTokenMs"]
		if hasFirst != (i == 0) {
			t.Errorf("delta %d firstTokenMs present = %v (only the first delta carries it)", i, hasFirst)
		}
		if i < len(partials) {
			// A partial is the open segment re-decoded from its first sample: a prefix of the final.
			text, _ := d["text"].(string)
			if d["kind"] != "partial" || d["t0Ms"] != 0.0 || !strings.HasPrefix(phonemes, strings.TrimSpace(text[:max(0, len(text)-4)])) {
				t.Errorf("partial %d: %v", i, d)
			}
		}
	}
	// The socket stays open: a second segment follows.
	c.sendAudio(pcm[:16000])
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	final2, _ := c.until("delta", "final")
	if final2["segment"] != 1.0 || final2["t0Ms"] != final["t1Ms"] {
		t.Errorf("second final %v", final2)
	}
	// An end with nothing in the segment still answers a final, empty.
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	final3, _ := c.until("delta", "final")
	if final3["segment"] != 2.0 || final3["text"] != "" || final3["t0Ms"] != final3["t1Ms"] {
		t.Errorf("empty final %v", final3)
	}
	if err := c.conn.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Logf("close: %v", err)
	}
}

func TestTranscribeDoorSegmentMax(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	h.transcribe.SegmentMax = 2 * time.Second
	h.transcribe.PartialCadence = time.Hour // finals only
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	if r := c.next(); r["segmentMaxMs"] != 2000.0 {
		t.Fatalf("ready %v", r)
	}
	// 5 s of phonemes: 80 ms each, so 2 s is exactly 25 phonemes.
	ids := strings.Repeat("ə", 25) + strings.Repeat("ɪ", 25) + strings.Repeat("ʊ", 12)
	pcm, _ := codecSpeech(t, ids)
	c.sendAudio(pcm)
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	wantTexts := []string{strings.Repeat("ə", 25), strings.Repeat("ɪ", 25), strings.Repeat("ʊ", 12)}
	for seg, want := range wantTexts {
		f, _ := c.until("delta", "final")
		t0, t1 := float64(seg*2000), min(float64(seg*2000+2000), float64(len(pcm))*1000/16000)
		if f["segment"] != float64(seg) || f["t0Ms"] != t0 || f["t1Ms"] != t1 || f["text"] != want {
			t.Errorf("segment %d: %v, want t0 %g t1 %g text %q", seg, f, t0, t1, want)
		}
	}
}

func TestTranscribeDoorBadInputKeepsTheSession(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.next() // ready
	pcm, phonemes := codecSpeech(t, "ðə kˈæt")
	half := len(pcm) / 2
	c.sendAudio(pcm[:half])
	tests := []struct {
		name  string
		typ   websocket.MessageType
		data  []byte
		error string
	}{
		{"odd-length PCM", websocket.MessageBinary, []byte{1, 2, 3}, "odd_length_pcm"},
		{"text that is not end", websocket.MessageText, []byte("hello"), "unknown_message"},
		{"JSON of another type", websocket.MessageText, []byte(`{"type":"flush"}`), "unknown_message"},
		{"frame over 4 MiB", websocket.MessageBinary, make([]byte, FrameLimit+2), "frame_too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.typ, tc.data)
			m, _ := c.until("error", "")
			if m["name"] != tc.error || m["message"] == "" {
				t.Fatalf("error %v, want %s", m, tc.error)
			}
		})
	}
	// Nothing already sent was lost: the rest of the audio completes the sentence.
	c.sendAudio(pcm[half:])
	c.send(websocket.MessageText, []byte(`{"type":"end"}`))
	final, _ := c.until("delta", "final")
	if final["text"] != phonemes {
		t.Fatalf("final after bad frames %q, want %q", final["text"], phonemes)
	}
}

func TestTranscribeDoorAnswersPings(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.next()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func TestTranscribeDoorSessionCap(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{MaxSessions: 1})
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.next()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, h.wsURL("/v1/transcribe"), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second session: err %v resp %+v, want 429 with Retry-After", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	var e door.ErrorFrame
	if json.Unmarshal(body, &e) != nil || e.Name != "too_many_sessions" {
		t.Fatalf("429 body %s", body)
	}
}

func TestTranscribeDoorDrainSendsFinal(t *testing.T) {
	h := newHearingServer(t, Config{})
	h.transcribe.PartialCadence = time.Hour
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.next()
	pcm, phonemes := codecSpeech(t, "ðə kˈæt")
	c.sendAudio(pcm)
	c.Ping() // every frame before the ping has been read by the server
	grace, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go h.svc.Sockets.Shutdown(grace, time.Second)
	final, _ := c.until("delta", "final")
	if final["text"] != phonemes {
		t.Fatalf("final at shutdown %q, want %q", final["text"], phonemes)
	}
	if code, reason := c.closeStatus(); code != websocket.StatusGoingAway || reason != "shutting_down" {
		t.Fatalf("close %d %q, want going away shutting_down", code, reason)
	}
}

func TestTranscribeDoorOrigins(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{Origins: door.MustOrigins("*.app.example")})
	tests := map[string]struct {
		origin string
		status int
	}{
		"no Origin (not a browser)": {"", http.StatusSwitchingProtocols},
		"allowed browser origin":    {"https://voice.app.example", http.StatusSwitchingProtocols},
		"foreign browser origin":    {"https://evil.example", http.StatusForbidden},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			header := http.Header{}
			if tc.origin != "" {
				header.Set("Origin", tc.origin)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, h.wsURL("/v1/transcribe"), &websocket.DialOptions{HTTPHeader: header})
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("dial: %v %+v, want %d", err, resp, tc.status)
			}
			if conn != nil {
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
			body, _ := io.ReadAll(resp.Body)
			var e door.ErrorFrame
			if json.Unmarshal(body, &e) != nil || e.Name != "origin_not_allowed" {
				t.Fatalf("403 body %s", body)
			}
		})
	}
}

// Ping waits for the server's pong, which it sends while reading: every frame sent before has
// been read.
func (c *sttClient) Ping() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.conn.Ping(ctx); err != nil {
		c.t.Fatalf("ping: %v", err)
	}
}

// TestTranscribeDoorRefusesUnmaskedFrames speaks raw RFC 6455 so that it can send what no
// conforming client library sends: an unmasked frame.
func TestTranscribeDoorRefusesUnmaskedFrames(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	key := make([]byte, 16)
	rand.Read(key)
	req := "GET /v1/transcribe HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	readFrame := func() (op byte, payload []byte) {
		hdr := make([]byte, 2)
		if _, err := io.ReadFull(br, hdr); err != nil {
			t.Fatalf("read frame: %v", err)
		}
		n := int(hdr[1] & 0x7F)
		switch n {
		case 126:
			b := make([]byte, 2)
			io.ReadFull(br, b)
			n = int(binary.BigEndian.Uint16(b))
		case 127:
			b := make([]byte, 8)
			io.ReadFull(br, b)
			n = int(binary.BigEndian.Uint64(b))
		}
		payload = make([]byte, n)
		io.ReadFull(br, payload)
		return hdr[0] & 0x0F, payload
	}
	if op, p := readFrame(); op != 1 || !strings.Contains(string(p), `"ready"`) {
		t.Fatalf("first frame op %d %s", op, p)
	}
	// An unmasked binary frame of 4 bytes of audio.
	if _, err := conn.Write([]byte{0x82, 0x04, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	op, p := readFrame()
	var e door.ErrorFrame
	if op != 1 || json.Unmarshal(p, &e) != nil || e.Name != "unmasked_frame" {
		t.Fatalf("got op %d %s, want the unmasked_frame error", op, p)
	}
	op, p = readFrame()
	if op != 8 || len(p) < 2 || binary.BigEndian.Uint16(p) != uint16(websocket.StatusProtocolError) || string(p[2:]) != "unmasked_frame" {
		t.Fatalf("got op %d %q, want close 1002 unmasked_frame", op, p)
	}
	conn.Write([]byte{0x88, 0x80, 0, 0, 0, 0}) // our close, masked
}

// BenchmarkTranscribeDoorAddedLatency measures the door's own latency: from the first audio byte
// sent to the first delta received, minus the decode time the door reports (decodeMs), on the
// fixture mount. The cadence is 1 s of audio, so the whole second is sent at once.
func BenchmarkTranscribeDoorAddedLatency(b *testing.B) {
	h := newHearingServer(b, Config{})
	pcm, _ := codecSpeech(b, "ðə kˈæt sˈæt ɔn ðə mˈæt")
	frame := audio.Float32ToPCM16(pcm[:audio.WhisperSampleRate])
	var added float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := dialSTT(b, h.wsURL("/v1/transcribe"))
		c.next()
		start := time.Now()
		c.send(websocket.MessageBinary, frame)
		d := c.next()
		wall := float64(time.Since(start).Microseconds()) / 1000
		added += wall - d["decodeMs"].(float64)
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
	b.ReportMetric(added/float64(b.N), "added-ms")
}

// TestTranscribeDoorDecodesOnClientClose: a client that closes mid-utterance has its audio
// decoded and the final attempted. coder/websocket answers the client's close frame at once, so
// the final cannot reach that client; a client that wants it sends {"type":"end"} first.
func TestTranscribeDoorDecodesOnClientClose(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{})
	h.transcribe.PartialCadence = time.Hour
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.next()
	pcm, _ := codecSpeech(t, "ðə kˈæt")
	c.sendAudio(pcm)
	c.Ping()
	before := h.svc.speech.Whisper.Stats().Decodes
	c.conn.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(20 * time.Second)
	for h.svc.speech.Whisper.Stats().Decodes == before || h.svc.Sockets.Open() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("decodes %d (was %d), sockets open %d", h.svc.speech.Whisper.Stats().Decodes, before, h.svc.Sockets.Open())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTranscribeDoorIncrementalMel: the door's decoder decodes partials and finals through the
// segment's incremental log-mel (the MelStream holds exactly the job's audio), with the same
// tokens as a whole-window decode; a new segment starts the stream afresh.
func TestTranscribeDoorIncrementalMel(t *testing.T) {
	h := newHearingServer(t, Config{})
	pcm, phonemes := codecSpeech(t, sttSentence)
	s := &transcribeSession{engine: h.svc.speech.Whisper}
	ctx := context.Background()
	step := len(pcm)/4 + 1
	for seg := range 2 {
		for end := step; ; end += step {
			end = min(end, len(pcm))
			j := sttJob{segment: seg, pcm: pcm[:end], final: end == len(pcm)}
			got, err := s.transcribe(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			if s.mel == nil || s.mel.Len() != end || s.melSeg != seg {
				t.Fatalf("segment %d after %d samples: not decoded through the segment's MelStream", seg, end)
			}
			want, err := h.svc.speech.Whisper.Transcribe(ctx, pcm[:end])
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want.Text {
				t.Fatalf("segment %d after %d samples: %q, whole-window decode %q", seg, end, got.Text, want.Text)
			}
			if j.final {
				if got.Text != phonemes {
					t.Fatalf("final %q, want %q", got.Text, phonemes)
				}
				break
			}
		}
	}
}

// A socket that stops sending is closed after the idle timeout (issue 18 item 8e: it was held
// for ever), but not before the audio it sent is decoded and its final sent.
func TestTranscribeDoorIdleCloses(t *testing.T) {
	testkit.CheckLeaks(t)
	h := newHearingServer(t, Config{SocketIdle: time.Second})
	c := dialSTT(t, h.wsURL("/v1/transcribe"))
	c.next() // ready
	pcm, phonemes := codecSpeech(t, sttSentence)
	c.send(websocket.MessageBinary, audio.Float32ToPCM16(pcm)) // one frame, then silence
	final, _ := c.until("delta", "final")
	if final["text"] != phonemes {
		t.Errorf("the idle close's final %q, want %q", final["text"], phonemes)
	}
	if e, _ := c.until("error", ""); e["name"] != "idle_timeout" {
		t.Errorf("error %v, want idle_timeout", e)
	}
	if code, reason := c.closeStatus(); code != websocket.StatusPolicyViolation || reason != "idle_timeout" {
		t.Errorf("closed %v %q, want 1008 idle_timeout", code, reason)
	}
}
