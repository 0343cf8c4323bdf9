package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
)

// Issue 18, the raw speech doors: what one client sends must not take a node's memory. Each test
// measures the server's peak resident set (VmHWM, reset first) against a bound; a guard kills the
// server as soon as its RSS passes the bound, so a regression fails fast instead of eating the box.

// procStatusKiB reads one field (VmRSS:, VmHWM:) of /proc/PID/status, in KiB.
func procStatusKiB(pid int, field string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// statusKiB reads one field (VmRSS:, VmHWM:) of the server's /proc/PID/status, in KiB.
func (s *server) statusKiB(t testing.TB, field string) int {
	t.Helper()
	n, err := procStatusKiB(s.cmd.Process.Pid, field)
	if err != nil {
		t.Fatalf("server status: %v", err)
	}
	return n
}

// memoryGuard bounds the server's growth from now: it resets the peak (VmHWM, via clear_refs),
// samples VmRSS every 20 ms and kills the server the moment it grows past limitMiB. done stops it
// and returns the growth at the peak, in MiB, failing t when it passed the limit.
func (s *server) memoryGuard(t testing.TB, limitMiB int) (done func() (growthMiB int)) {
	t.Helper()
	pid := s.cmd.Process.Pid
	// 5 resets the peak resident set to the present one (proc(5), clear_refs).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Logf("clear_refs: %v (the peak is measured from the server's start)", err)
	}
	base := s.statusKiB(t, "VmRSS:")
	stop := make(chan struct{})
	var killedAt int
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-s.exited:
				return
			case <-tick.C:
			}
			n, err := procStatusKiB(pid, "VmRSS:")
			if err != nil {
				return
			}
			if (n-base)>>10 > limitMiB {
				killedAt = n
				t.Logf("the server grew from %d MiB to %d MiB, past the bound of +%d MiB: killing it", base>>10, n>>10, limitMiB)
				s.cmd.Process.Kill()
				return
			}
		}
	})
	// A test that fails before calling done still stops the sampler (the server may outlive it).
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); wg.Wait() }) }
	t.Cleanup(halt)
	return func() int {
		t.Helper()
		halt()
		if killedAt > 0 {
			t.Fatalf("the server grew from %d MiB past %d MiB (+%d MiB, the bound is +%d MiB): killed", base>>10, killedAt>>10, (killedAt-base)>>10, limitMiB)
		}
		growth := (s.statusKiB(t, "VmHWM:") - base) >> 10
		if growth > limitMiB {
			t.Fatalf("the server's peak grew by %d MiB from %d MiB, the bound is %d MiB", growth, base>>10, limitMiB)
		}
		return growth
	}
}

// speechGrowthMiB bounds one long synthesis request: a piece's audio (kokoro.MaxPieceChars, a few
// model calls) and the frames queued for the socket, with room for the allocator. Before the fix
// the 240 KB request below grew the server by ~3.5 GB.
const speechGrowthMiB = 160

// TestFaultsSpeechLongText: "hello world " × 20000 (240 KB, no sentence end) on every door that
// synthesises is spoken a part at a time, each part sent as it is made: the audio starts while
// the server stays within speechGrowthMiB, in many frames of bounded size.
func TestFaultsSpeechLongText(t *testing.T) {
	text := strings.Repeat("hello world ", 20000)
	const wantFrames = 20 // read this many parts' audio, then hang up

	t.Run("audio/speech", func(t *testing.T) {
		s := startServer(t, serverOpts{})
		done := s.memoryGuard(t, speechGrowthMiB)
		body, _ := json.Marshal(map[string]any{"input": text, "response_format": "pcm"})
		req, _ := http.NewRequest("POST", s.Base+"/v1/audio/speech", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.Client.Do(req)
		if err != nil {
			done()
			t.Fatalf("POST: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		// 20 parts of ~400 characters at the fixture's 80 ms a phoneme: well over 24 MiB.
		const want = 24 << 20
		n, err := io.CopyN(io.Discard, resp.Body, want)
		growth := done()
		if n < want {
			t.Fatalf("read %d bytes of audio (%v), want %d", n, err, want)
		}
		t.Logf("/v1/audio/speech: %d MiB of audio read; server peak +%d MiB", n>>20, growth)
	})

	t.Run("synthesize", func(t *testing.T) {
		s := startServer(t, serverOpts{})
		conn := s.dialWS(t, "/v1/synthesize")
		readJSON(t, conn, 30*time.Second) // ready
		done := s.memoryGuard(t, speechGrowthMiB)
		if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, []byte(text)); err != nil {
			t.Fatal(err)
		}
		frames, largest := 0, 0
		for frames < wantFrames {
			typ, data, err := conn.Read(ctxT(t, 60*time.Second))
			if err != nil {
				done()
				t.Fatalf("after %d audio frames: %v", frames, err)
			}
			if typ == websocket.MessageBinary {
				frames++
				largest = max(largest, len(data))
				continue
			}
			var h map[string]any
			json.Unmarshal(data, &h)
			if h["type"] != "audio" {
				t.Fatalf("frame %v, want audio headers", h)
			}
			if n := len([]rune(h["text"].(string))); n > 1600 {
				t.Fatalf("a part of %d characters", n)
			}
		}
		conn.Close(websocket.StatusNormalClosure, "")
		growth := done()
		t.Logf("/v1/synthesize: %d audio frames, the largest %d KiB; server peak +%d MiB", frames, largest>>10, growth)
	})

	t.Run("speak/stream flush", func(t *testing.T) {
		s := startServer(t, serverOpts{})
		conn := s.dialWS(t, "/v1/speak/stream")
		readJSON(t, conn, 30*time.Second) // ready
		readJSON(t, conn, 30*time.Second) // format
		done := s.memoryGuard(t, speechGrowthMiB)
		msg, _ := json.Marshal(map[string]any{"type": "flush", "text": text})
		if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
		frames := 0
		for frames < wantFrames {
			typ, data, err := conn.Read(ctxT(t, 60*time.Second))
			if err != nil {
				done()
				t.Fatalf("after %d audio frames: %v", frames, err)
			}
			if typ == websocket.MessageBinary {
				frames++
				continue
			}
			var m map[string]any
			json.Unmarshal(data, &m)
			if m["type"] == "error" {
				t.Fatalf("error %v", m)
			}
		}
		conn.Close(websocket.StatusNormalClosure, "")
		growth := done()
		t.Logf("/v1/speak/stream flush: %d audio frames; server peak +%d MiB", frames, growth)
	})
}

// lowRateWAV is an 8-bit mono WAV at 1 kHz holding secs seconds of silence (0x80): one byte a
// second of audio becomes 64 bytes once decoded to float32 at 16 kHz.
func lowRateWAV(secs int) []byte {
	data := bytes.Repeat([]byte{0x80}, secs*1000)
	return append(audio.WAVHeader(1000, 1, 8, len(data)), data...)
}

func postUpload(t testing.TB, s *server, file []byte) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "low.wav")
	fw.Write(file)
	mw.WriteField("response_format", "verbose_json")
	mw.Close()
	status, out := s.do("POST", "/v1/audio/transcriptions", mw.FormDataContentType(), &body)
	var m map[string]any
	json.Unmarshal(out, &m)
	return status, m
}

// uploadGrowthMiB bounds one upload being transcribed: the 1 MiB it is held in memory (larger
// ones are spooled to disk), a 30 s window and a second of source, the decoder's work.
const uploadGrowthMiB = 64

// TestFaultsLowRateUpload: the 8 MB, 8-bit, 1 kHz WAV (2.2 hours of audio) is refused by
// name before a sample is decoded, and one just under MaxUploadSeconds is transcribed window by
// window: neither grows the server past uploadGrowthMiB (before: +1.2 GB for the first, +125 MB
// for the second, decoded and resampled whole).
func TestFaultsLowRateUpload(t *testing.T) {
	s := startServer(t, serverOpts{})

	done := s.memoryGuard(t, uploadGrowthMiB)
	status, m := postUpload(t, s, lowRateWAV(8000))
	growth := done()
	e, _ := m["error"].(map[string]any)
	if status != http.StatusRequestEntityTooLarge || e["code"] != "audio_too_long" {
		t.Fatalf("8000 s upload: %d %v, want 413 audio_too_long", status, m)
	}
	t.Logf("8 MB 8-bit 1 kHz WAV: refused %s; server peak +%d MiB", e["code"], growth)

	done = s.memoryGuard(t, uploadGrowthMiB)
	status, m = postUpload(t, s, lowRateWAV(1800))
	growth = done()
	if status != 200 || m["duration"] != 1800.0 {
		t.Fatalf("1800 s upload: %d %v", status, m)
	}
	if segs, _ := m["segments"].([]any); len(segs) != 60 {
		t.Fatalf("%d segments, want 60 windows of 30 s", len(segs))
	}
	t.Logf("1800 s 8-bit 1 kHz WAV: transcribed in 60 windows; server peak +%d MiB", growth)
}

// TestFaultsRawSocketIdle: /v1/transcribe and /v1/synthesize close a socket that sends nothing
// (issue 18 item 8e: silent sockets were held 190 s and more), by name.
func TestFaultsRawSocketIdle(t *testing.T) {
	needFlag(t, "speech-idle-timeout")
	s := startServer(t, serverOpts{Args: []string{"--speech-idle-timeout", "1s"}})
	for _, path := range []string{"/v1/transcribe", "/v1/synthesize", "/v1/speak/stream"} {
		t.Run(path, func(t *testing.T) {
			conn := s.dialWS(t, path)
			var closeErr error
			for range 4 {
				typ, data, err := conn.Read(ctxT(t, 30*time.Second))
				if err != nil {
					closeErr = err
					break
				}
				var m map[string]any
				if typ != websocket.MessageText || json.Unmarshal(data, &m) != nil {
					t.Fatalf("a %v frame from a silent socket", typ)
				}
				if m["type"] == "error" && m["name"] != "idle_timeout" {
					t.Fatalf("error %v, want idle_timeout", m)
				}
			}
			var ce websocket.CloseError
			if !errors.As(closeErr, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "idle_timeout" {
				t.Fatalf("silent socket ended with %v, want 1008 idle_timeout", closeErr)
			}
		})
	}
}

// stalledGrowthMiB bounds stalledSockets sockets (and as many /v1/audio/speech requests) that each
// ask for the long text and never read: per socket, the audio queued for its writer
// (ttsQueueBytes, 1 MiB) plus one chunk (at most kokoro.MaxPhonemes of audio, ~2 MB at the
// fixture's 80 ms a phoneme) and its byte copy while it is written, plus the request's text (240
// KB, held twice at most), and room for the collector: measured +72 to +87 MiB for the 16. Before
// the writer's queue was bounded by bytes, each socket held up to 8 (synthesize) or 16 (speak
// stream) chunks of ~1.6 MB: +243 MiB, and the 8 /v1/audio/speech requests were never closed.
const (
	stalledSockets   = 8
	stalledGrowthMiB = 128
)

// TestFaultsSpeechStalledReaders: sockets that ask for a long text and never read (TCP
// backpressure) hold a bounded amount each: synthesis stops while a socket's queued audio is at
// its byte bound, nothing is dropped, and a socket whose client reads nothing for the write
// timeout is closed (the server's open-session gauge goes back to 0: /v1/audio/speech's body
// writes have the same bound, they no longer block forever on a reader that stopped).
func TestFaultsSpeechStalledReaders(t *testing.T) {
	text := strings.Repeat("hello world ", 20000)
	s := startServer(t, serverOpts{})
	done := s.memoryGuard(t, stalledGrowthMiB)
	flush, _ := json.Marshal(map[string]any{"type": "flush", "text": text})
	body, _ := json.Marshal(map[string]any{"input": text, "response_format": "pcm"})
	for i := range stalledSockets {
		path, msg := "/v1/synthesize", []byte(text)
		if i%2 == 1 {
			path, msg = "/v1/speak/stream", flush
		}
		conn := s.dialWS(t, path)
		if err := conn.Write(ctxT(t, 10*time.Second), websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
		// A raw HTTP/1.1 request whose response is never read.
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/audio/speech HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", s.Addr, s.Token, len(body))
		if _, err := c.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	// Every one of them is closed by the server once its writes stall for the write timeout.
	open := func() (n float64) {
		for series, v := range s.metricsOf(t) {
			if strings.HasPrefix(series, "voiced_sessions_open{") && strings.Contains(series, `kind="speech"`) {
				n += v
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for n := open(); n > 0; n = open() {
		if time.Now().After(deadline) {
			growth := done()
			t.Fatalf("%v speaking sessions still open 3 min after their clients stopped reading (server peak +%d MiB)", n, growth)
		}
		time.Sleep(200 * time.Millisecond)
	}
	growth := done()
	t.Logf("%d sockets and %d /v1/audio/speech requests that never read: all closed by the server; server peak +%d MiB", stalledSockets, stalledSockets, growth)
}

// pushFloodGrowthMiB bounds a flood of full-size transcript pushes: the node takes at most
// DefaultTranscriptPushBytes (16 MiB) of bodies at once, each held with its float32 samples
// (3× the body; silence admits nothing), with room for the collector. Before the gate, every
// push read its 4 MiB and made its 8 MiB of samples while it queued for its transcript's lock.
const pushFloodGrowthMiB = 112

// TestFaultsTranscriptPushFlood: 32 concurrent 4 MiB pushes over 4 half-duplex transcripts are
// taken one at a time per transcript and within the node's push budget; the rest are refused by
// name (409 transcript_busy, 429 transcript_pushes_full) before their bodies are read.
func TestFaultsTranscriptPushFlood(t *testing.T) {
	s := startServer(t, serverOpts{})
	var ids []string
	for range 4 {
		code, out := s.do("POST", "/v1/audio/transcript", "", nil)
		var m map[string]string
		json.Unmarshal(out, &m)
		if code != http.StatusCreated || m["id"] == "" {
			t.Fatalf("open: %d %s", code, out)
		}
		ids = append(ids, m["id"])
	}
	push := make([]byte, 4<<20) // 131 s of silence: the squelch admits none of it
	done := s.memoryGuard(t, pushFloodGrowthMiB)
	var mu sync.Mutex
	answers := map[string]int{}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", s.Base+"/v1/audio/transcript/"+ids[i%len(ids)], bytes.NewReader(push))
			req.Header.Set("Authorization", "Bearer "+s.Token)
			req.Header.Set("Content-Type", "application/octet-stream")
			name := "transport error"
			if resp, err := s.Client.Do(req); err == nil {
				var m map[string]any
				json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				name = fmt.Sprint(resp.StatusCode)
				if n, ok := m["name"].(string); ok {
					name += " " + n
				}
			}
			mu.Lock()
			answers[name]++
			mu.Unlock()
		})
	}
	wg.Wait()
	growth := done()
	t.Logf("32 concurrent 4 MiB pushes to 4 transcripts: %v; server peak +%d MiB", answers, growth)
	if answers["200"] == 0 {
		t.Errorf("no push was taken: %v", answers)
	}
	for name := range answers {
		switch name {
		case "200", "409 transcript_busy", "429 transcript_pushes_full", "transport error":
		default:
			t.Errorf("answer %q, want 200 or a named refusal", name)
		}
	}
}
