package speechdoor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/fixture"
	ortenv "github.com/voiced/voiced/speechcore/runtime"
)

// hearingMount is one fixture mount for every hearing-door test, written once.
var hearingMount struct {
	once sync.Once
	dir  string
	err  error
}

// hearingServer is the speech Service started on the fixture mount and the speech-to-text doors
// served by an httptest server (without Guard: the doors are under test).
type hearingServer struct {
	svc         *Doors
	srv         *httptest.Server
	transcribe  *TranscribeDoor
	transcripts *TranscriptDoor
}

// transcript is the open transcript id on the server.
func (h *hearingServer) transcript(id string) *transcript {
	h.transcripts.mu.Lock()
	defer h.transcripts.mu.Unlock()
	return h.transcripts.sessions[id]
}

// startSpeech starts a speech Service on dir (every model loaded and warmed on the shared ONNX
// Runtime environment, or one opened for this test) and closes it when the test ends.
func startSpeech(t testing.TB, dir string, log *slog.Logger) *speechcore.Service {
	t.Helper()
	lib := ortenv.LibPathFromEnv()
	if lib == "" {
		t.Skip("VOICED_ORT_LIB is not set: run through make or eval \"$(make -s env)\"")
	}
	// One ONNX Runtime environment per process: share one that is open, else open one for this test.
	env := ortenv.Shared()
	if env == nil {
		var err error
		if env, err = ortenv.Open(ortenv.Config{LibPath: lib, IntraOpThreads: 1}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.Close() })
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	svc, err := speechcore.New(speechcore.Config{AssetsDir: dir, Env: env, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		svc.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// fixtureMount writes the fixture mount once into m.
func fixtureMount(t testing.TB, m *struct {
	once sync.Once
	dir  string
	err  error
}, prefix string) string {
	t.Helper()
	if ortenv.LibPathFromEnv() == "" {
		t.Skip("VOICED_ORT_LIB is not set: run through make or eval \"$(make -s env)\"")
	}
	m.once.Do(func() {
		m.dir, m.err = os.MkdirTemp("", prefix)
		if m.err == nil {
			m.err = fixture.Write(m.dir, fixture.Options{SileroModel: os.Getenv("VOICED_SILERO_MODEL")})
		}
	})
	if m.err != nil {
		t.Fatalf("fixture mount: %v", m.err)
	}
	return m.dir
}

func newHearingServer(t testing.TB, cfg Config) *hearingServer {
	t.Helper()
	speech := startSpeech(t, fixtureMount(t, &hearingMount, "voiced-hearing-"), cfg.Log)
	svc, err := New(speech, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &hearingServer{svc: svc, transcribe: NewTranscribeDoor(svc), transcripts: NewTranscriptDoor(svc)}
	svc.transcripts = h.transcripts
	mux := http.NewServeMux()
	mux.Handle("GET /v1/transcribe", h.transcribe)
	mux.Handle("POST /v1/audio/transcriptions", NewTranscriptionsDoor(svc))
	mux.Handle("POST /v1/audio/translations", NewTranslationsDoor(svc))
	mux.HandleFunc("POST /v1/audio/transcript", h.transcripts.Open)
	mux.HandleFunc("POST /v1/audio/transcript/{id}", h.transcripts.Push)
	mux.HandleFunc("DELETE /v1/audio/transcript/{id}", h.transcripts.Close)
	h.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		h.srv.Close()
		svc.Close()
	})
	return h
}

func (h *hearingServer) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + path
}

// codecSpeech is the fixture codec's audio for a phoneme string, at 16 kHz: the tone table
// played at 24 kHz and resampled as a Kokoro reply would be.
func codecSpeech(t testing.TB, phonemes string) ([]float32, string) {
	t.Helper()
	ids := fixture.PhonemeIDs(phonemes)
	return audio.Resample(fixture.Waveform(ids, 1), fixture.SampleRate, audio.WhisperSampleRate), fixture.Phonemes(ids)
}

// realSpeech is silero-vad-go's recording (float32 LE, 16 kHz): Silero opens on it, not on tones.
func realSpeech(t testing.TB) []float32 {
	t.Helper()
	dir := os.Getenv("VOICED_SILERO_TESTFILES")
	if dir == "" {
		t.Skip("VOICED_SILERO_TESTFILES unset: run through make or eval \"$(make -s env)\"")
	}
	data, err := os.ReadFile(filepath.Join(dir, "samples.pcm"))
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]float32, len(data)/4)
	for i := range pcm {
		pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return pcm
}

// sttClient is a test client of /v1/transcribe: a goroutine reads every frame (so pings are
// answered) into frames until the socket closes.
type sttClient struct {
	t      testing.TB
	conn   *websocket.Conn
	frames chan map[string]any
	closed chan error // the read error that ended the socket
}

func dialSTT(t testing.TB, url string) *sttClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", url, err, status)
	}
	c := &sttClient{t: t, conn: conn, frames: make(chan map[string]any, 256), closed: make(chan error, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				c.closed <- err
				close(c.frames)
				return
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				m = map[string]any{"type": "not-json", "raw": string(data)}
			}
			c.frames <- m
		}
	}()
	t.Cleanup(func() {
		conn.CloseNow()
		<-done
	})
	return c
}

func (c *sttClient) next() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.frames:
		if !ok {
			c.t.Fatalf("socket closed: %v", <-c.closed)
		}
		return m
	case <-time.After(20 * time.Second):
		c.t.Fatal("no frame within 20 s")
	}
	return nil
}

// until reads frames up to and including the first of type typ (and kind, for deltas).
func (c *sttClient) until(typ, kind string) (last map[string]any, before []map[string]any) {
	c.t.Helper()
	for {
		m := c.next()
		if m["type"] == typ && (kind == "" || m["kind"] == kind) {
			return m, before
		}
		before = append(before, m)
	}
}

func (c *sttClient) send(typ websocket.MessageType, data []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, typ, data); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// sendAudio sends pcm in 20 ms frames (640 bytes), as a microphone would.
func (c *sttClient) sendAudio(pcm []float32) {
	c.t.Helper()
	b := audio.Float32ToPCM16(pcm)
	for len(b) > 0 {
		n := min(640, len(b))
		c.send(websocket.MessageBinary, b[:n])
		b = b[n:]
	}
}

// closeStatus waits for the server to close the socket.
func (c *sttClient) closeStatus() (websocket.StatusCode, string) {
	c.t.Helper()
	for {
		select {
		case m, ok := <-c.frames:
			if !ok {
				err := <-c.closed
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					return ce.Code, ce.Reason
				}
				return websocket.CloseStatus(err), ""
			}
			c.t.Logf("frame before close: %v", m)
		case <-time.After(20 * time.Second):
			c.t.Fatal("the server did not close the socket")
		}
	}
}
